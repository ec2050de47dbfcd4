module example.com/mod

go 1.22

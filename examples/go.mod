module github.com/memorder/wafl/examples

go 1.22

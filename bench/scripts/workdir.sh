# workdir.sh — sourced by eval.sh and ablate.sh.
#
# reset_workdir DIR: makes DIR a work directory with no run state: no trace,
# plan, report or log of an earlier try. The instrumented sources, the
# runtime module and the test binaries (build/, rt/, bin/) are kept when DIR
# was used by an earlier try of the same package: wafl rebuilds them whenever
# a source changes, and they do not affect what a run does. Keeping them
# makes a try cost its test runs instead of a link (about 3x faster at rest,
# more under load); every try still gets a fresh preparation run.
reset_workdir() {
	local dir=$1 entry
	rm -rf "$dir".*
	[[ -d $dir ]] || return 0
	for entry in "$dir"/* "$dir"/.[!.]*; do
		[[ -e $entry ]] || continue
		case ${entry##*/} in
		build | rt | bin | .gitignore) ;;
		*) rm -rf "$entry" ;;
		esac
	done
}

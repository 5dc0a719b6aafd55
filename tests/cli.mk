# cli.mk - `make completions`: regenerate completions/ from the built binary's option
# tables (dlprof --list-cmds, dlprof CMD --list-opts, dlprof CMD -h).  Run it after adding,
# renaming or removing an option, and commit the result: tests/t0001-cli.sh fails when
# the committed completions differ from freshly generated ones.
completions: dlprof
	bash scripts/gen-completions.sh ./dlprof completions

# demo.mk - the bundled demo workload (examples/demo.c) and `make demo`
#
#   make demo    build dlprof and the demo, record the demo, print the report

DEMO_CFLAGS := -O2 -g -fopenmp -Wall -Wextra
DEMO_LIBS   := -lopenblas -ldnnl -lm

$(O)/examples/demo: examples/demo.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(DEMO_CFLAGS) -o $@ $< $(DEMO_LIBS)

EXTRA_TARGETS += $(O)/examples/demo

# what dlprof is for: where the time goes by family (with the findings), then the
# top functions, from a recording with whole stacks (the default)
demo: dlprof $(HELPERS) $(O)/examples/demo
	./dlprof record -o $(O)/demo.data -- $(O)/examples/demo
	./dlprof report -i $(O)/demo.data --sort family
	./dlprof report -i $(O)/demo.data --no-findings -n 20

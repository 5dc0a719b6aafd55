/* flamegraph.h - a self-contained interactive flame graph (SVG), written by dlprof.
 *
 * Stacks come as fold's text ("root;...;leaf", a weight each); with colour_root the
 * first element is not a frame but the sample's operator family, which colours the
 * frames (each frame: the family most of its samples have).  The SVG holds its own
 * script: click a frame to zoom to it, "Search" to highlight frames matching a regular
 * expression (with the share they cover), "Reset Zoom"; each frame's title gives its
 * name, weight and share.  Frames narrower than 0.1 px are left out (their weight stays
 * in their parent). */
#ifndef DLPROF_FLAMEGRAPH_H
#define DLPROF_FLAMEGRAPH_H

#include <stdint.h>
#include <stdio.h>

struct flamegraph;

struct flamegraph_opts {
	const char *title;
	const char *unit;	/* "samples", "us" */
	int width;		/* pixels, default 1200 */
};

struct flamegraph *flamegraph_new(int colour_root);
void flamegraph_free(struct flamegraph *fg);
void flamegraph_add(struct flamegraph *fg, const char *stack, uint64_t weight);
/* A differential graph: the base profile's stacks (same units as flamegraph_add's).  Widths
 * stay the new profile's; each frame is coloured by its change against the base (red:
 * more, blue: less, the change against the largest one drawn) and its title gives both
 * weights and the change.  Frames only in the base have no width and are not drawn. */
void flamegraph_add_base(struct flamegraph *fg, const char *stack, uint64_t weight);
/* Returns the number of frames drawn, -1 on a write error. */
long flamegraph_write(struct flamegraph *fg, FILE *out, const struct flamegraph_opts *o);

#endif

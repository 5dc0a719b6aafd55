/* flamegraph.c - the interactive SVG flame graph (flamegraph.h). */
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "rephash.h"
#include "util.h"

#define FRAME_H		16
#define PAD_TOP		40
#define PAD_BOTTOM	30
#define PAD_SIDE	10
#define MIN_WIDTH	0.1

struct fg_node {
	const char *name;	/* pooled */
	uint64_t value;
	uint32_t parent, first, next;	/* ids, 0 none (node 0 is the root "all") */
	const char *family;	/* the majority family of its samples (Boyer-Moore vote) */
	uint64_t vote;
	uint64_t base;		/* diff: the weight in the base profile */
};

struct flamegraph {
	struct strpool pool;
	struct u64map child;	/* hash(parent, name) -> id + 1 (probed) */
	struct fg_node *n;
	size_t nr, alloc;
	int colour_root;
	FILE *out;
	double scale;		/* px per unit of weight */
	int width, depth;
	long drawn;
	int diff;		/* a differential graph: widths from the new profile, colours
				   from the change against the base */
	double maxdelta;	/* the largest change of a frame drawn */
};

struct flamegraph *flamegraph_new(int colour_root)
{
	struct flamegraph *fg = xcalloc(1, sizeof(*fg));

	strpool_init(&fg->pool);
	u64map_init(&fg->child);
	fg->colour_root = colour_root;
	ALLOC_GROW(fg->n, 1, fg->alloc);
	memset(&fg->n[0], 0, sizeof(fg->n[0]));
	fg->n[0].name = strpool_intern(&fg->pool, "all");
	fg->nr = 1;
	return fg;
}

void flamegraph_free(struct flamegraph *fg)
{
	if (!fg)
		return;
	free(fg->n);
	u64map_release(&fg->child);
	strpool_release(&fg->pool);
	free(fg);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static uint32_t child_of(struct flamegraph *fg, uint32_t parent, const char *name)
{
	uint64_t h = mix(((uint64_t)parent << 32) ^ (uintptr_t)name) | 1;

	for (;; h++) {
		void **slot = u64map_slot(&fg->child, h);
		uint32_t id;

		if (*slot) {
			id = (uint32_t)((uintptr_t)*slot - 1);
			if (fg->n[id].parent == parent && fg->n[id].name == name)
				return id;
			continue;
		}
		ALLOC_GROW(fg->n, fg->nr + 1, fg->alloc);
		id = (uint32_t)fg->nr++;
		memset(&fg->n[id], 0, sizeof(fg->n[id]));
		fg->n[id].name = name;
		fg->n[id].parent = parent;
		fg->n[id].next = fg->n[parent].first;
		fg->n[parent].first = id;
		*slot = (void *)(uintptr_t)(id + 1);
		return id;
	}
}

static void vote(struct fg_node *n, const char *family, uint64_t w)
{
	if (!family)
		return;
	if (n->family == family) {
		n->vote += w;
	} else if (n->vote <= w) {
		n->family = family;
		n->vote = w - n->vote;
	} else {
		n->vote -= w;
	}
}

/* Walk stack's frames from the root, creating nodes; the weight goes to the new profile's
 * value (and the family vote), or to the base's. */
static void add_stack(struct flamegraph *fg, const char *stack, uint64_t weight, int base)
{
	const char *p = stack, *family = NULL;
	uint32_t id = 0;
	int first = 1;

	if (base)
		fg->n[0].base += weight;
	else
		fg->n[0].value += weight;
	while (*p) {
		size_t len = strcspn(p, ";");
		const char *name = strpool_intern_len(&fg->pool, p, len);

		p += len + (p[len] == ';');
		if (first && fg->colour_root) {
			family = name;
			if (!base)
				vote(&fg->n[0], family, weight);
			first = 0;
			continue;
		}
		first = 0;
		id = child_of(fg, id, name);
		if (base) {
			fg->n[id].base += weight;
		} else {
			fg->n[id].value += weight;
			vote(&fg->n[id], family, weight);
		}
	}
}

void flamegraph_add(struct flamegraph *fg, const char *stack, uint64_t weight)
{
	add_stack(fg, stack, weight, 0);
}

void flamegraph_add_base(struct flamegraph *fg, const char *stack, uint64_t weight)
{
	fg->diff = 1;
	add_stack(fg, stack, weight, 1);
}

static double delta(const struct fg_node *n)
{
	return (double)n->value - (double)n->base;
}

/* Diff colours: red where the frame took more time than in the base, blue where less,
 * the deeper the larger the change against the largest; light grey unchanged. */
static void diff_colour(const struct flamegraph *fg, const struct fg_node *n, int *r, int *g, int *b)
{
	double d = delta(n), f = fg->maxdelta > 0 ? (d < 0 ? -d : d) / fg->maxdelta : 0;
	int x = (int)(230 - 190 * (f > 1 ? 1 : f));

	if (d > 0) {
		*r = 255;
		*g = *b = x;
	} else if (d < 0) {
		*r = *g = x;
		*b = 255;
	} else {
		*r = *g = *b = 230;
	}
}

static void max_delta(struct flamegraph *fg, uint32_t id)
{
	double d = delta(&fg->n[id]);

	if (id && fg->n[id].value * fg->scale >= MIN_WIDTH) {
		if (d < 0)
			d = -d;
		if (d > fg->maxdelta)
			fg->maxdelta = d;
	}
	for (uint32_t c = fg->n[id].first; c; c = fg->n[c].next)
		max_delta(fg, c);
}

/* A colour by family: a hue per kind of work, a shade per frame name. */
static void colour(const char *family, const char *name, int *r, int *g, int *b)
{
	uint64_t h = 1469598103934665603ull;
	int v;

	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	v = (int)(h % 56);
	if (!family)
		family = "";
	if (!strncmp(family, "jit", 3))
		*r = 70 + v, *g = 190 + v / 2, *b = 70 + v / 2;		/* greens */
	else if (!strncmp(family, "kernel", 6))
		*r = 230, *g = 130 + v, *b = 40 + v / 2;		/* oranges */
	else if (!strncmp(family, "omp", 3))
		*r = 90 + v, *g = 140 + v, *b = 220;			/* blues */
	else if (!strcmp(family, "gemm") || !strncmp(family, "dnnl", 4))
		*r = 170 + v, *g = 110 + v / 2, *b = 210;		/* purples */
	else if (!strcmp(family, "aten"))
		*r = 225, *g = 90 + v, *b = 80 + v / 2;			/* reds */
	else if (!strcmp(family, "python"))
		*r = 220, *g = 200 + v / 2, *b = 70 + v;		/* yellows */
	else
		*r = 190 + v / 2, *g = 180 + v / 2, *b = 160 + v / 2;	/* warm greys */
}

static void xml_text(FILE *out, const char *s, size_t max)
{
	size_t n = 0;

	for (; *s && n < max; s++, n++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, out);
		}
	}
}

static void draw(struct flamegraph *fg, uint32_t id, double x, int depth, const char *unit)
{
	const struct fg_node *n = &fg->n[id];
	double w = n->value * fg->scale, cx = x;
	double y = PAD_TOP + (double)(fg->depth - depth) * FRAME_H;
	int r, g, b;
	size_t chars = w > 20 ? (size_t)((w - 6) / 7) : 0;

	if (w < MIN_WIDTH)
		return;
	if (fg->diff)
		diff_colour(fg, n, &r, &g, &b);
	else
		colour(n->family, n->name, &r, &g, &b);
	fputs("<g><title>", fg->out);
	xml_text(fg->out, n->name, 4096);
	if (fg->diff)
		fprintf(fg->out, " (%llu %s, %.2f%%; base %llu %s, %+lld %s)", (unsigned long long)n->value,
			unit, 100.0 * n->value / (fg->n[0].value ? fg->n[0].value : 1),
			(unsigned long long)n->base, unit, (long long)n->value - (long long)n->base, unit);
	else
		fprintf(fg->out, " (%llu %s, %.2f%%)", (unsigned long long)n->value, unit,
			100.0 * n->value / (fg->n[0].value ? fg->n[0].value : 1));
	fprintf(fg->out, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/><text x=\"%.1f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, r, g, b, x + 3, y + 11.5);
	if (chars >= 3) {
		size_t len = strlen(n->name);

		if (len <= chars) {
			xml_text(fg->out, n->name, len);
		} else {
			xml_text(fg->out, n->name, chars - 2);
			fputs("..", fg->out);
		}
	}
	fputs("</text></g>\n", fg->out);
	fg->drawn++;
	/* children left to right by name, as flamegraph.pl orders them */
	{
		uint32_t *kids = NULL;
		size_t nk = 0, alloc = 0;

		for (uint32_t c = n->first; c; c = fg->n[c].next) {
			ALLOC_GROW(kids, nk + 1, alloc);
			kids[nk++] = c;
		}
		for (size_t i = 1; i < nk; i++) {
			uint32_t k = kids[i];
			size_t j = i;

			while (j > 0 && strcmp(fg->n[kids[j - 1]].name, fg->n[k].name) > 0) {
				kids[j] = kids[j - 1];
				j--;
			}
			kids[j] = k;
		}
		for (size_t i = 0; i < nk; i++) {
			draw(fg, kids[i], cx, depth + 1, unit);
			cx += fg->n[kids[i]].value * fg->scale;
		}
		free(kids);
	}
}

static int max_depth(const struct flamegraph *fg, uint32_t id, int d, double scale)
{
	int m = d;

	for (uint32_t c = fg->n[id].first; c; c = fg->n[c].next)
		if (fg->n[c].value * scale >= MIN_WIDTH) {
			int k = max_depth(fg, c, d + 1, scale);

			if (k > m)
				m = k;
		}
	return m;
}

/* The viewer: zoom on click, search, reset.  Frames are <g> in #frames, each a <title>,
 * a <rect> and a <text>; the original geometry is kept in data- attributes. */
static const char script[] =
"var W, frames, zoomed = null, pad = " "10" ";\n"
"function init(evt) {\n"
"  var svg = document.documentElement; W = +svg.getAttribute('width');\n"
"  frames = Array.prototype.slice.call(document.getElementById('frames').children);\n"
"  frames.forEach(function (g) {\n"
"    var r = g.querySelector('rect');\n"
"    g.setAttribute('data-x', r.getAttribute('x')); g.setAttribute('data-w', r.getAttribute('width'));\n"
"    g.setAttribute('data-name', g.querySelector('title').textContent.replace(/ \\([^()]*\\)$/, ''));\n"
"    g.addEventListener('click', function () { zoom(g); });\n"
"    g.addEventListener('mouseover', function () { details(g.querySelector('title').textContent); });\n"
"    g.addEventListener('mouseout', function () { details(' '); });\n"
"  });\n"
"  document.getElementById('search').addEventListener('click', function () { search(prompt('Search (regular expression)', '')); });\n"
"  document.getElementById('unzoom').addEventListener('click', unzoom);\n"
"}\n"
"function details(t) { document.getElementById('details').textContent = t; }\n"
"function fit(g, x, w) {\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text'), name = g.getAttribute('data-name');\n"
"  r.setAttribute('x', x); r.setAttribute('width', w); t.setAttribute('x', x + 3);\n"
"  var n = Math.floor((w - 6) / 7);\n"
"  t.textContent = n < 3 ? '' : name.length <= n ? name : name.substring(0, n - 2) + '..';\n"
"}\n"
"function zoom(z) {\n"
"  var zx = +z.getAttribute('data-x'), zw = +z.getAttribute('data-w');\n"
"  var zy = +z.querySelector('rect').getAttribute('y'), k = (W - 2 * pad) / zw;\n"
"  frames.forEach(function (g) {\n"
"    var x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w');\n"
"    var y = +g.querySelector('rect').getAttribute('y');\n"
"    if (y > zy && x <= zx + 1e-6 && x + w >= zx + zw - 1e-6) { g.style.display = ''; fit(g, pad, W - 2 * pad); }\n"
"    else if (y <= zy && x >= zx - 1e-6 && x + w <= zx + zw + 1e-6) { g.style.display = ''; fit(g, pad + (x - zx) * k, w * k); }\n"
"    else g.style.display = 'none';\n"
"  });\n"
"  zoomed = z; document.getElementById('unzoom').style.opacity = 1;\n"
"}\n"
"function unzoom() {\n"
"  frames.forEach(function (g) { g.style.display = ''; fit(g, +g.getAttribute('data-x'), +g.getAttribute('data-w')); });\n"
"  zoomed = null; document.getElementById('unzoom').style.opacity = 0;\n"
"}\n"
"function search(re) {\n"
"  if (re === null || re === undefined) return;\n"
"  var rx; try { rx = new RegExp(re); } catch (e) { return; }\n"
"  var spans = [];\n"
"  frames.forEach(function (g) {\n"
"    var r = g.querySelector('rect');\n"
"    if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
"    var hit = re !== '' && rx.test(g.getAttribute('data-name'));\n"
"    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
"    if (hit) spans.push([+g.getAttribute('data-x'), +g.getAttribute('data-w')]);\n"
"  });\n"
"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
"  var cover = 0, end = -1;\n"
"  spans.forEach(function (s) { var e = s[0] + s[1]; if (e > end) { cover += e - Math.max(s[0], end); end = e; } });\n"
"  document.getElementById('matched').textContent = re === '' ? ' ' :\n"
"    'Matched: ' + (100 * cover / (W - 2 * pad)).toFixed(1) + '%';\n"
"}\n";

long flamegraph_write(struct flamegraph *fg, FILE *out, const struct flamegraph_opts *o)
{
	int width = o->width > 200 ? o->width : 1200, height;
	const char *unit = o->unit ? o->unit : "samples";

	fg->out = out;
	fg->width = width;
	fg->drawn = 0;
	fg->scale = fg->n[0].value ? (double)(width - 2 * PAD_SIDE) / fg->n[0].value : 0;
	fg->depth = max_depth(fg, 0, 0, fg->scale);
	fg->maxdelta = 0;
	if (fg->diff)
		max_delta(fg, 0);
	height = PAD_TOP + (fg->depth + 1) * FRAME_H + PAD_BOTTOM;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" onload=\"init(evt)\" "
		"viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }"
		" #frames > g { cursor: pointer; } #frames > g:hover rect { stroke: black; stroke-width: 0.5; }"
		" #search, #unzoom { cursor: pointer; }</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(250,250,245)\"/>\n"
		"<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">",
		width, height, width, height, script, width, height, width / 2);
	xml_text(out, o->title ? o->title : "Flame Graph", 512);
	fprintf(out, "</text>\n<text id=\"unzoom\" x=\"%d\" y=\"24\" style=\"opacity: 0\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n<g id=\"frames\">\n",
		PAD_SIDE, width - 70, width - 160, height - 10, PAD_SIDE, height - 10);
	if (fg->n[0].value)
		draw(fg, 0, PAD_SIDE, 0, unit);
	fputs("</g>\n</svg>\n", out);
	return ferror(out) ? -1 : fg->drawn;
}

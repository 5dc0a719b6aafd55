/* isa-scalar.c - built with -mgeneral-regs-only: integer code, no vector registers */
unsigned long isa_scalar_hash(const unsigned char *p, unsigned long n);

unsigned long isa_scalar_hash(const unsigned char *p, unsigned long n)
{
	unsigned long h = 1469598103934665603ul;

	for (unsigned long i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ul;
	return h;
}

/* isa-cpuid.c - print "FLAG 0|1" for check-isa's features, as /proc/cpuinfo names them,
 * straight from CPUID (independent of dlprof's own code). */
#include <cpuid.h>
#include <stdio.h>

int main(void)
{
	unsigned a = 0, b = 0, c = 0, d = 0, max = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0, c1 = 0;

	__get_cpuid(0, &max, &b, &c, &d);
	__get_cpuid(1, &a, &b, &c1, &d);
	if (max >= 7 && __get_cpuid_count(7, 0, &a, &b7, &c7, &d7) && a >= 1)
		__get_cpuid_count(7, 1, &a71, &b, &c, &d);
	printf("sse4_2 %d\n", !!(c1 & (1u << 20)));
	printf("avx %d\n", !!(c1 & (1u << 28)));
	printf("avx2 %d\n", !!(b7 & (1u << 5)));
	printf("fma %d\n", !!(c1 & (1u << 12)));
	printf("avx512f %d\n", !!(b7 & (1u << 16)));
	printf("avx512cd %d\n", !!(b7 & (1u << 28)));
	printf("avx512bw %d\n", !!(b7 & (1u << 30)));
	printf("avx512dq %d\n", !!(b7 & (1u << 17)));
	printf("avx512vl %d\n", !!(b7 & (1u << 31)));
	printf("avx512_vnni %d\n", !!(c7 & (1u << 11)));
	printf("avx512_bf16 %d\n", !!(a71 & (1u << 5)));
	printf("avx512_fp16 %d\n", !!(d7 & (1u << 23)));
	printf("amx_tile %d\n", !!(d7 & (1u << 24)));
	printf("amx_int8 %d\n", !!(d7 & (1u << 25)));
	printf("amx_bf16 %d\n", !!(d7 & (1u << 22)));
	return 0;
}

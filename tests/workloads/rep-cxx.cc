// rep-cxx: the hot function is a C++ template member in a namespace, to check demangling.
#include <cstdlib>

namespace repns {
template <typename T> struct Kernel {
	static volatile T sink;
	__attribute__((noinline)) static void run(long n, T scale)
	{
		T x = 1;
		for (long i = 0; i < n; i++)
			x = x * scale + T(0.5);
		sink = x;
	}
};
template <typename T> volatile T Kernel<T>::sink;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 30;

	for (long r = 0; r < rounds; r++)
		repns::Kernel<double>::run(10000000, 1.0000001);
	return 0;
}

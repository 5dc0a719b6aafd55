/* rep-swaplib.c - built twice, as librep-swapa.so (SWAP_OUTER=swap_a_outer) and
 * librep-swapb.so (swap_b_outer): the same code under names of the same length, so the
 * two map alike and their functions lie at the same offsets.  The outer function calls
 * back into the program, which spins: the library's frame is a caller, not the leaf. */
__attribute__((noinline)) void SWAP_OUTER(void (*spin)(double), double secs)
{
	volatile int after = 0;

	spin(secs);
	after++;	/* (no tail call: the frame stays on the stack) */
}

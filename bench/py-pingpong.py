# bench/py-pingpong.py - two Python threads handing an Event back and forth 20,000
# times: the worst case for what a switch-out costs (about 35,000 a second under
# record); prints its own time.  bench/README.md, "Python stacks at the switch-outs".
import threading, time
N = 20000
a, b = threading.Event(), threading.Event()
def other():
    for _ in range(N):
        a.wait(); a.clear(); b.set()
t = threading.Thread(target=other); t.start()
t0 = time.perf_counter()
for _ in range(N):
    a.set(); b.wait(); b.clear()
t.join()
print("pingpong %.3f s" % (time.perf_counter() - t0))

# py_waits.py - a Python thread that blocks where it is known: time.sleep() in
# sleep_here(), a threading.Event's wait in event_here(), between short CPU bursts in
# spin(); it prints the seconds each took as it measured them, "sleep_here S",
# "event_here S", "spin S" (tests/t8007-python-offcpu.sh).
#   python3 py_waits.py [ROUNDS]
import sys
import threading
import time


def spin(sec):
    end = time.perf_counter() + sec
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def sleep_here(sec):
    time.sleep(sec)


def event_here(ev, sec):
    ev.wait(sec)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    ev = threading.Event()
    took = {"spin": 0.0, "sleep_here": 0.0, "event_here": 0.0}
    for _ in range(rounds):
        t0 = time.perf_counter()
        spin(0.02)
        t1 = time.perf_counter()
        sleep_here(0.04)
        t2 = time.perf_counter()
        event_here(ev, 0.02)
        t3 = time.perf_counter()
        took["spin"] += t1 - t0
        took["sleep_here"] += t2 - t1
        took["event_here"] += t3 - t2
    for k, v in took.items():
        print("%s %.6f" % (k, v))


main()

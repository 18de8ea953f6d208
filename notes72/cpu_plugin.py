"""pytest plugin (notes only): per test wall and CPU seconds (self + waited children), appended to $K72_LOG."""
import os, resource, time

def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF); c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def pytest_runtest_call(item):
    item._k72 = (time.time(), _cpu())

def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    log = os.environ.get("K72_LOG")
    if not log:
        return
    load = open("/proc/loadavg").read().split()[0]
    with open(log, "a") as f:
        f.write(f"{report.nodeid.split('[')[-1].rstrip(']')}\t{report.outcome}\twall={report.duration:.0f}s\tload1={load}\t{time.strftime('%H:%M:%S', time.gmtime())}\n")

def pytest_runtest_teardown(item):
    t = getattr(item, "_k72", None)
    log = os.environ.get("K72_LOG")
    if t and log:
        with open(log, "a") as f:
            f.write(f"  cpu={_cpu() - t[1]:.0f}s\n")

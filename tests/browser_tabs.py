"""Two notebooks visited at once: two JupyterLab pages in the run's one Chromium, each
driven by a thread of its own.

A visit spends about half its time waiting, on a kernel starting or running the cells, on
a plot drawing, on an autosave interval passing; two pages share those waits. Playwright's
sync API serves only the thread that started it, so each thread starts its own and joins
the one Chromium through Playwright's browser server (browser_harness.endpoint), on a
connection that is told about its own page only. Each page is a
fresh browser context at the projector's size with a JupyterLab workspace of its own, so
neither sees the other's tabs; each notebook is open in one page at a time.

A job is a name and a function of the page. Each thread first does the jobs given to it
alone, then takes shared jobs from one queue, in the order given, until none is left.
`result(name)` waits for a job's return value (or raises what it raised), so a test waits
only for what it reads. With `pytest -s`, each job's start is printed with the time.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import Callable

from browser_harness import endpoint, lab_home, lab_page

T0 = time.monotonic()
Job = tuple[str, Callable[[object], object]]
WAIT_FOR_RESULT = 900  # s; a thread's whole share of the run fits in this, even on a busy machine


class Tabs:
    def __init__(self, browser, lab, size: tuple[int, int], own: list[list[Job]],
                 shared: list[Job]):
        self.url, self.lab, self.size = endpoint(browser), lab, size
        self.done: dict[str, threading.Event] = {}
        self.results: dict[str, tuple[bool, object]] = {}
        for name, _ in [job for jobs in own for job in jobs] + shared:
            self.done[name] = threading.Event()
        self.queue: queue.Queue[Job] = queue.Queue()
        for job in shared:
            self.queue.put(job)
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._work, args=(f"tab{i + 1}", jobs),
                                         name=f"browser-tab{i + 1}", daemon=True)
                        for i, jobs in enumerate(own)]
        for thread in self.threads:
            thread.start()

    def _work(self, workspace: str, own: list[Job]) -> None:
        from playwright.sync_api import sync_playwright
        jobs = list(own)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.connect(self.url)
                with lab_page(browser, self.lab, *self.size, shut_down=False) as page:
                    lab_home(page, self.lab, workspace)
                    while not self.stopping.is_set():
                        if jobs:
                            name, job = jobs.pop(0)
                        else:
                            try:
                                name, job = self.queue.get_nowait()
                            except queue.Empty:
                                break
                        self._do(name, job, page)
        except BaseException as error:          # the page itself failed: so did its jobs
            for name, _ in jobs:
                self._finish(name, False, error)
            while True:
                try:
                    name, _ = self.queue.get_nowait()
                except queue.Empty:
                    break
                self._finish(name, False, error)

    def _do(self, name: str, job, page) -> None:
        start = time.monotonic()
        print(f"[{threading.current_thread().name} {start - T0:6.1f}] {name} starts", flush=True)
        try:
            value = job(page)
        except BaseException as error:          # this job's finding; the next one goes on
            self._finish(name, False, error)
        else:
            self._finish(name, True, value)

    def _finish(self, name: str, ok: bool, value) -> None:
        self.results[name] = (ok, value)
        self.done[name].set()

    def result(self, name: str):
        """What job `name` returned, once it has run (what it raised is raised here)."""
        if not self.done[name].wait(WAIT_FOR_RESULT):
            raise TimeoutError(f"waited {WAIT_FOR_RESULT} s for the browser's {name!r}")
        ok, value = self.results[name]
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Let the threads finish the job at hand (no new one starts), then end every
        notebook session they left."""
        self.stopping.set()
        deadline = time.monotonic() + 120
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with contextlib.suppress(Exception):
            self.lab.shut_down_sessions()

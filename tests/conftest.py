"""Suite-wide rules that pytest's defaults do not give.

pytest already exits non-zero when a test fails, and with code 5 when it collects no
test at all. It exits 0, though, when every collected test was skipped: a run that
checked nothing must not look like a pass, so that is made a failure here too.
"""

import pytest

_passed = 0


def pytest_runtest_logreport(report):
    global _passed
    if report.when == "call" and report.passed:
        _passed += 1


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == pytest.ExitCode.OK and _passed == 0:
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter:
            reporter.write_sep("!", "no test passed (all skipped?): a run that checks nothing fails",
                               red=True)


@pytest.fixture(scope="session", autouse=True)
def ipympl_backend():
    """Live figures are ipympl canvases (widgets), as in a kernel with %matplotlib widget."""
    import matplotlib
    previous = matplotlib.get_backend()
    matplotlib.use("module://ipympl.backend_nbagg")
    yield
    matplotlib.use(previous)


@pytest.fixture(autouse=True)
def close_figures():
    """Each test's figures are closed after it, so none piles up across tests."""
    yield
    import matplotlib.pyplot as plt
    plt.close("all")

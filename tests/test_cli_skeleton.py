import pytest

from pcfair.cli import main


def test_cli_without_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2


def test_version(capsys):
    import pcfair

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pcfair {pcfair.__version__}"


def test_help_is_fast_and_imports_no_heavy_module():
    """``pcfair --help`` imports neither the audit ports nor numpy/pandas (lazy registration)
    and takes well under half a second (best of three runs, interpreter start included)."""
    import subprocess
    import sys
    import time

    code = ("import sys\nfrom pcfair.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\n"
            "heavy = [m for m in ('numpy', 'pandas', 'scipy', 'sklearn', 'numba', "
            "'pcfair.audits.cbs') if m in sys.modules]\nprint('HEAVY', heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert "HEAVY []" in proc.stdout and "audit" in proc.stdout and "learn" in proc.stdout
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pcfair.cli", "--help"], capture_output=True,
                       check=True)
        times.append(time.perf_counter() - t0)
    assert min(times) < 0.5, times


def test_audit_commands_register_on_use(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for method in ("cbs", "testsgd", "disaggregate", "monitor"):
        assert method in out


def test_dir_of_the_package_lists_the_names_imported_on_use():
    """``dir(pcfair)`` (and so tab completion) shows the lazily imported API, and every name
    it lists resolves."""
    import pcfair

    names = dir(pcfair)
    assert {"certify", "find_patterns", "load", "learn_pc", "report", "PCClassifier",
            "OptionError", "ResourceCappedWarning"} <= set(names)
    assert set(pcfair.__all__) <= set(names)
    for name in ("certify", "find_patterns", "load"):
        assert callable(getattr(pcfair, name))

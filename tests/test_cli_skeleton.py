import pytest

from pcfair.cli import main


def test_cli_without_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2

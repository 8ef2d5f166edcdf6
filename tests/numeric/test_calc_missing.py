"""Issue 11: every missing input of a ``calc`` run in one run, one line each; one missing keeps its one-line message.

The names are the calculator's declared inputs (knowledge/calculators/training-duration.yaml):
with only ``mfu`` given, F2's chain lacks params_active (derivable by FX18 from the model shape,
whose first input is ``layers``), train_tokens, n_gpus and peak_flops; availability,
checkpoint_overhead and flop_per_param_token have defaults.
"""

from __future__ import annotations

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.numeric.calculators import Calculator, MissingInputs, load_records, run


def cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_missing_input_is_one_line(capsys):
    code, out, err = cli(["calc", "training-duration", "--set", "mfu=0.4"], capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert lines[0] == "aiinfra: error: calc:training-duration needs 4 inputs (give each with --set NAME=VALUE):"
    assert [line.split()[1] for line in lines[1:]] == ["params_active", "train_tokens", "n_gpus", "peak_flops"]
    assert all(line.startswith("  --set ") for line in lines[1:])
    assert lines[1].endswith("; or give layers to derive it (FX18)")  # which input would derive it
    assert lines[3].startswith("  --set n_gpus (GPU, ")  # the unit, then what it is
    assert lines[4].startswith("  --set peak_flops (FLOP/s, ")


def test_a_preset_fills_what_it_can_and_the_rest_is_listed(capsys):
    # --model gives the shape, so params_active follows from FX18; three remain
    code, _, err = cli(["calc", "training-duration", "--model", "llama-3.1-70b", "--set", "mfu=0.4"], capsys)
    assert code == 2
    assert [line.split()[1] for line in err.splitlines()[1:]] == ["train_tokens", "n_gpus", "peak_flops"]


def test_one_missing_input_keeps_the_one_line_message(capsys):
    # --device gives peak_flops (and an MFU band), --model the shape; only train_tokens is left
    code, _, err = cli(["calc", "training-duration", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "n_gpus=1024"], capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("aiinfra: error: --set train_tokens: calc:training-duration needs a value for train_tokens (tokens, ")


def test_the_api_raises_one_error_naming_every_field(module):
    calc = Calculator.from_record(load_records(_root())["calc:training-duration"])
    with pytest.raises(MissingInputs) as exc:
        run(calc, module, {"mfu": "0.4"})
    assert isinstance(exc.value, InputError) and exc.value.exit_code == 2
    assert exc.value.field == "--set params_active, --set train_tokens, --set n_gpus, --set peak_flops"
    assert len(exc.value.missing) == 4


def _root():
    from engine.core.paths import shipped_root

    return shipped_root()

# TPU002 syntax-error: reported by `xla2tpu check` for a file that does not parse.
# Corpus fixtures must parse, so this one only pins that valid code never gets it;
# tests/cli_gate.rs runs `check` on a Python 2 file.
print("a Python 3 file")

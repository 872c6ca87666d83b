"""``microcompiler compile MODEL -o DIR``: write the model library."""
from __future__ import annotations

from microcompiler.compiler import MAX_NAME_LENGTH, compile_model, write_atomically


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="compile a .tflite model into a C model library",
                       description="Compile MODEL into DIR/src/*.c, DIR/include/*.h and DIR/metadata.json.")
    p.add_argument("model", help="the .tflite file")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory: new, empty, or a model library compiled before (only the files "
                        "that compile wrote are replaced; anything else is refused)")
    p.add_argument("--name", help=f"C name prefix: a C identifier of at most {MAX_NAME_LENGTH} characters (default: from "
                        "the model file name)")
    p.set_defaults(func=run)


def run(args) -> int:
    library = compile_model(args.model, name=args.name)
    out = write_atomically(library, args.output)
    meta = library.metadata
    print(f"compiled {meta['name']}: {len(meta['operators'])} operators, arena {meta['arena_bytes']} B, "
          f"weights {meta['params_bytes']} B -> {out}")
    return 0

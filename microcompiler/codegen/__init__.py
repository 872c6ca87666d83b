"""C code generation: the model library (operator functions, weights, AOT executor, metadata)."""

from microcompiler.codegen.model_library import ModelLibrary, generate_library  # noqa: F401

"""Subgraphs get every check the main graph gets (issue 35 item 2): zero points outside their type
and each operator's kernel checks in WHILE bodies and conditions, IF branches and CALL_ONCE's
subgraph, and omitted (-1) inputs of control-flow operators: one line, exit 2, no traceback. The
same damage in the main graph was already refused; in a WHILE body it compiled and ran wrong."""

from __future__ import annotations

import numpy as np
import pytest
from flow_models import LoopDamage, while_int8
from model_builder import ModelBuilder, add_options, call_once_options, if_options
from test_errors import assert_one_line_error, cli

from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError

SCALE, ZP = 0.05, -3
FAR = -(2**40)


def if_model(branch_zp=ZP) -> bytes:
    n = 6
    b = ModelBuilder()
    branches = []
    for name, zp in (("then_add", branch_zp), ("else_add", ZP)):
        s = b.subgraph(name)
        x = s.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
        k = s.constant("k", np.full((1, n), 9, np.int8), scale=SCALE, zero_point=zp)
        y = s.activation("y", [1, n], "int8", scale=0.1, zero_point=1)
        s.op("ADD", [x, k], [y], add_options())
        s.set_io([x], [y])
        branches.append(s)
    flag = b.activation("flag", [1], "bool")
    x = b.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    y = b.activation("y", [1, n], "int8", scale=0.1, zero_point=1)
    b.op("IF", [flag, x], [y], if_options(branches[0].index, branches[1].index))
    return b.finish(inputs=[flag, x], outputs=[y])


def call_once_model(init_zp=ZP) -> bytes:
    """CALL_ONCE's subgraph adds two constants into a tensor of its own (damaged zero point)."""
    n = 4
    b = ModelBuilder()
    init = b.subgraph("init")
    c1 = init.constant("c1", np.full((1, n), 3, np.int8), scale=SCALE, zero_point=ZP)
    c2 = init.activation("c2", [1, n], "int8", scale=SCALE, zero_point=init_zp)
    init.op("ADD", [c1, c1], [c2], add_options())
    init.set_io([], [])
    x = b.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    y = b.activation("y", [1, n], "int8", scale=SCALE, zero_point=ZP)
    b.op("CALL_ONCE", [], [], call_once_options(init.index))
    b.op("ADD", [x, x], [y], add_options())
    return b.finish(inputs=[x], outputs=[y])


CASES = {
    "while body zero point": (
        lambda: while_int8(damage=LoopDamage(body_zp=FAR)),
        ["zero point -1099511627776", "'loop_body'"],
    ),
    "while cond zero point": (
        lambda: while_int8(damage=LoopDamage(cond_zp=2**40)),
        ["zero point 1099511627776", "'loop_cond'"],
    ),
    "if branch zero point": (lambda: if_model(branch_zp=300), ["zero point 300", "'then_add'"]),
    "call_once zero point": (lambda: call_once_model(init_zp=FAR), ["zero point -1099511627776", "'sg_init'"]),
    "while body operator": (
        lambda: while_int8(damage=LoopDamage(body_activation="TANH")),
        ["subgraph 'loop_body'", "operator 1 (ADD)"],
    ),
    "while omitted input": (
        lambda: while_int8(damage=LoopDamage(omit_count=True)),
        ["operator 0 (WHILE)", "omitted (-1) input"],
    ),
    "while repeated output": (
        lambda: while_int8(damage=LoopDamage(repeat_output=True)),
        ["operator 0 (WHILE)", "more than once among its outputs", "corrupted"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_damage_in_a_subgraph_is_refused_like_the_main_graphs(tmp_path, case):
    build, fragments = CASES[case]
    model = tmp_path / "m.tflite"
    model.write_bytes(build())
    with pytest.raises(MicrocompilerError) as caught:
        compile_model(model)
    message = str(caught.value)
    assert "\n" not in message and all(f in message for f in fragments), message


def test_the_command_line_refuses_a_damaged_while_body_in_one_line(tmp_path):
    model = tmp_path / "m.tflite"
    model.write_bytes(while_int8(damage=LoopDamage(body_zp=FAR)))
    assert_one_line_error(cli("compile", model, "-o", tmp_path / "out"), "zero point -1099511627776", "damaged")
    model.write_bytes(while_int8(damage=LoopDamage(omit_count=True)))
    assert_one_line_error(cli("compile", model, "-o", tmp_path / "out"), "omitted (-1) input")


def test_the_undamaged_models_still_compile(tmp_path):
    """The checks refuse the damage, not the models: each builder's undamaged model compiles."""
    for k, build in enumerate((while_int8, if_model, call_once_model)):
        model = tmp_path / f"m{k}.tflite"
        model.write_bytes(build())
        assert compile_model(model).info.outputs

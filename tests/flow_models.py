"""Models with several subgraphs (CALL_ONCE, IF, WHILE) and resource variables, built for the
tests (tests/test_control_flow.py, tests/test_board_control_flow.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from model_builder import ModelBuilder, add_options, call_once_options, if_options, var_handle_options, while_options

SCALE, ZP = 0.05, -3  # the accumulator's int8 quantization (input, variable and output alike)


def accumulator_int8(n: int = 8, start: int = 17, call_once: bool = True) -> bytes:
    """A CALL_ONCE initialises variable 'acc' to a constant; each inference then does acc = acc + x
    (int8 ADD, saturating) and outputs the new value: the output depends on every earlier input.
    Without ``call_once`` the model has one subgraph and 'acc' starts from TFLM's default."""
    b = ModelBuilder()
    if call_once:
        init = b.subgraph("init")
        h0 = init.activation("acc_handle", [], "resource")
        init.op("VAR_HANDLE", [], [h0], var_handle_options("acc"))
        c = init.constant("acc_start", np.full((1, n), start, np.int8), scale=SCALE, zero_point=ZP)
        init.op("ASSIGN_VARIABLE", [h0, c], [])
        init.set_io([], [])

    x = b.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    h = b.activation("acc_handle", [], "resource")
    old = b.activation("acc_old", [1, n], "int8", scale=SCALE, zero_point=ZP)
    new = b.activation("acc_new", [1, n], "int8", scale=SCALE, zero_point=ZP)
    if call_once:
        b.op("CALL_ONCE", [], [], call_once_options(init.index))
    b.op("VAR_HANDLE", [], [h], var_handle_options("acc"))
    b.op("READ_VARIABLE", [h], [old])
    b.op("ADD", [old, x], [new], add_options())
    b.op("ASSIGN_VARIABLE", [h, new], [])
    return b.finish(inputs=[x], outputs=[new])


def if_int8(n: int = 6) -> bytes:
    """y = x + a if flag else x + x + b (each branch a subgraph of int8 ADDs with a constant)."""
    b = ModelBuilder()
    branches = []
    for name, doubled, value in (("then_add", False, 9), ("else_double", True, -20)):
        s = b.subgraph(name)
        x = s.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
        k = s.constant("k", np.full((1, n), value, np.int8), scale=SCALE, zero_point=ZP)
        y = s.activation("y", [1, n], "int8", scale=0.1, zero_point=1)
        if doubled:
            t = s.activation("t", [1, n], "int8", scale=0.1, zero_point=2)
            s.op("ADD", [x, x], [t], add_options())
            s.op("ADD", [t, k], [y], add_options(activation="RELU"))
        else:
            s.op("ADD", [x, k], [y], add_options())
        s.set_io([x], [y])
        branches.append(s)
    flag = b.activation("flag", [1], "bool")
    x = b.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    y = b.activation("y", [1, n], "int8", scale=0.1, zero_point=1)
    b.op("IF", [flag, x], [y], if_options(branches[0].index, branches[1].index))
    return b.finish(inputs=[flag, x], outputs=[y])


def while_int8(n: int = 6, damage: LoopDamage | None = None) -> bytes:
    """acc = x added to itself `count` times (int8 ADD, saturating), as a WHILE loop over
    (i, count, acc, x): the condition subgraph is i < count, the body i + 1 and acc + x (count and x
    pass through the body unchanged). `count` is a model input, so the trip count varies (0 too).
    ``damage`` breaks one thing of it (tests/test_subgraph_checks.py); only ``acc`` is an output then."""
    b = ModelBuilder()
    count = b.activation("count", [1], "int32")
    x = b.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    acc, i = _add_loop(b, b, count, x, n, damage or LoopDamage())
    return b.finish(inputs=[count, x], outputs=[acc] if damage else [acc, i])


@dataclass(frozen=True)
class LoopDamage:
    """One broken detail of ``while_int8``'s loop: a zero point of the body's or the condition's
    accumulator, the body's activation, an omitted (-1) WHILE input, a WHILE output listed twice."""

    body_zp: int = ZP
    cond_zp: int = ZP
    body_activation: str = "NONE"
    omit_count: bool = False
    repeat_output: bool = False


def _add_loop(
    b: ModelBuilder, caller: ModelBuilder, count: int, x: int, n: int, damage: LoopDamage = LoopDamage()
) -> tuple[int, int]:
    """Adds the WHILE loop of ``while_int8`` to subgraph ``caller`` (its condition and body become
    subgraphs of ``b``); returns its (acc, i) outputs."""
    cond, body = b.subgraph("loop_cond"), b.subgraph("loop_body")

    def loop_values(s, acc_zp=ZP):
        return (
            s.activation("i", [1], "int32"),
            s.activation("count", [1], "int32"),
            s.activation("acc", [1, n], "int8", scale=SCALE, zero_point=acc_zp),
            s.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP),
        )

    i, cnt, acc, xx = loop_values(cond, damage.cond_zp)
    more = cond.activation("more", [1], "bool")
    cond.op("LESS", [i, cnt], [more])
    cond.set_io([i, cnt, acc, xx], [more])

    i, cnt, acc, xx = loop_values(body)
    one = body.constant("one", np.ones(1, np.int32))
    i2 = body.activation("i_next", [1], "int32")
    acc2 = body.activation("acc_next", [1, n], "int8", scale=SCALE, zero_point=damage.body_zp)
    body.op("ADD", [i, one], [i2], add_options())
    body.op("ADD", [acc, xx], [acc2], add_options(activation=damage.body_activation))
    body.set_io([i, cnt, acc, xx], [i2, cnt, acc2, xx])

    i0 = caller.constant("i0", np.zeros(1, np.int32))
    acc0 = caller.constant("acc0", np.full((1, n), ZP, np.int8), scale=SCALE, zero_point=ZP)
    outs = [
        caller.activation(f"{name}_out", shape, dtype, scale=sc, zero_point=zp)
        for name, shape, dtype, sc, zp in (
            ("i", [1], "int32", None, None),
            ("count", [1], "int32", None, None),
            ("acc", [1, n], "int8", SCALE, ZP),
            ("x", [1, n], "int8", SCALE, ZP),
        )
    ]
    if damage.repeat_output:  # structure-aware fuzz seed 61: outputs [4, 4, 6, 7] ran, unlike TFLM
        outs[1] = outs[0]
    inputs = [i0, -1 if damage.omit_count else count, acc0, x]
    caller.op("WHILE", inputs, outs, while_options(cond.index, body.index))
    return outs[2], outs[0]


def nested_if_while_int8(n: int = 6) -> bytes:
    """IF(flag): the then-branch runs while_int8's loop (a WHILE inside a called subgraph, so its
    subgraph arena lies inside the branch's arena), the else-branch adds x to itself once."""
    b = ModelBuilder()
    then = b.subgraph("then_loop")
    count = then.activation("count", [1], "int32")
    x = then.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    acc, _ = _add_loop(b, then, count, x, n)
    then.set_io([count, x], [acc])
    other = b.subgraph("else_twice")
    count_e = other.activation("count", [1], "int32")
    x_e = other.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    y_e = other.activation("y", [1, n], "int8", scale=SCALE, zero_point=ZP)
    other.op("ADD", [x_e, x_e], [y_e], add_options())
    other.set_io([count_e, x_e], [y_e])
    flag = b.activation("flag", [1], "bool")
    count = b.activation("count", [1], "int32")
    x = b.activation("x", [1, n], "int8", scale=SCALE, zero_point=ZP)
    y = b.activation("y", [1, n], "int8", scale=SCALE, zero_point=ZP)
    b.op("IF", [flag, count, x], [y], if_options(then.index, other.index))
    return b.finish(inputs=[flag, count, x], outputs=[y])

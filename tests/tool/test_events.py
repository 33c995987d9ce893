"""The shared vocabulary: one variant reads the same whether it comes from a live compile or a report."""

import json

from jitguard.events import CompileEvent, ParamSpec, variant_dict


def _event() -> CompileEvent:
    return CompileEvent(
        kernel="scale_rows", key="k1", compile_ms=12.5,
        params={"x_ptr": ParamSpec("ptr", "*bf16", "aligned16", observed={"dtype": "bf16", "align": 0}),
                "n": ParamSpec("int", "i32", "div16", observed=32),
                "BLOCK": ParamSpec("constexpr", value=128)},
        options={"num_warps": 4, "num_stages": 3})


def test_a_live_variant_and_its_report_entry_are_the_same_variant():
    event = _event()
    # a report's variant_list entry: the event's fields through JSON, with keys the price does not read
    entry = json.loads(json.dumps({"key": event.key, "compile_ms": event.compile_ms, "triton_version": "3.9",
                                   "params": {n: s.to_dict() for n, s in event.params.items()},
                                   "options": event.options}))
    live, from_report = variant_dict(event), variant_dict(entry)
    assert live == from_report
    assert set(live) == {"params", "options"}
    assert live["params"]["n"] == {"kind": "int", "type": "i32", "spec": "div16", "value": None, "observed": 32}
    assert live["options"] == {"num_warps": 4, "num_stages": 3}
    live["options"]["num_warps"] = 8  # a copy: pricing may edit it without touching the event
    assert event.options["num_warps"] == 4


def test_a_mapping_of_param_specs_reads_as_their_dicts_and_no_options_as_empty():
    assert variant_dict({"params": {"n": ParamSpec("int", "i32", "one")}}) == {
        "params": {"n": {"kind": "int", "type": "i32", "spec": "one", "value": None, "observed": None}},
        "options": {}}


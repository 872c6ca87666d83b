"""On-device autotuning: per operator signature, the fastest bit-exact knob setting (docs/tuning.md).

signature (what a result is keyed by), candidates (what the kernels offer), measure (one job on a
device), runner (where jobs run), tuner (the search), log (the versioned JSON file compile applies).
"""

#!/usr/bin/env bash
# RoPE on a GPU in one run of about six minutes at most: the correctness checks against the
# CPU's float64 rotation (every scaling, both layouts, float32 and bfloat16, the module moved to
# the device, compiled with fullgraph=True under inductor), then the speed table against
# transformers' own path (CUDA events, median of 50 calls, kernels per call, compiled variants).
# Needs torch with CUDA and transformers; nothing from the network or the weights cache.
#
#   bash benchmarks/gpu_check.sh            # on the GPU
#   bash benchmarks/gpu_check.sh cpu        # the same scripts on the CPU, compiled ones left out
#
# PYTHON names the interpreter (default: python3). Each step has a hard time limit; a step that
# fails or runs out of time is reported and the next one still runs.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
device=${1:-cuda}
if [ "$device" = cpu ]; then
    check_flags=(--no-compile)
    speed_flags=(--no-compile --repeats 11)
else
    check_flags=(--budget 90)
    speed_flags=(--repeats 50 --budget 150)
fi
status=0
echo "## RoPE on $device: $(date -u '+%Y-%m-%d %H:%M UTC')"
"$python" - <<'PY' || status=1
import torch, transformers
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, transformers {transformers.__version__}")
if torch.cuda.is_available():
    print(f"GPU: {torch.cuda.get_device_name()}")
PY
echo
echo "### Correctness"
timeout -k 10 150 "$python" benchmarks/rope_device_check.py --device "$device" "${check_flags[@]}" \
    || { echo "correctness step failed or ran out of time (exit $?)"; status=1; }
echo
echo "### Speed"
timeout -k 10 190 "$python" benchmarks/rope_speed.py --device "$device" --peers-only "${speed_flags[@]}" \
    2> >(grep -v -e '^STAGE:' -e 'USDT:' -e 'ActivityProfiler' >&2) \
    || { echo "speed step failed or ran out of time (exit $?)"; status=1; }
exit $status

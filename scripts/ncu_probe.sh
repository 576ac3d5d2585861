#!/usr/bin/env bash
# Which metric sets Nsight Compute collects in ONE replay pass (issue 35: one ncu process per counting
# unit instead of one per metric group), and what an ncu process costs to start. Run on the device
# with $OUT set; writes $OUT/ncu_probe.log.
set -uo pipefail
: "${OUT:?set OUT}"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
LOG=$OUT/ncu_probe.log
PROG='import torch; a = torch.ones(1 << 20, device="cuda"); b = torch.empty_like(a); torch.cuda.synchronize(); b.copy_(a); torch.cuda.synchronize()'
{
  echo "ncu: $NCU ($($NCU --version | tail -1))"
  for set in "dram__bytes_read.sum,dram__bytes_write.sum" \
             "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct" \
             "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum" \
             "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum" \
             "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read_lookup_hit.sum,lts__t_sectors_op_read_lookup_miss.sum,gpu__time_duration.sum"; do
    echo "== metrics $set"
    s=$(date +%s.%N)
    $NCU --cache-control none --clock-control none -k regex:copy --metrics "$set" --csv python3 -c "$PROG" 2>&1 | grep -E "pass|ERR|error|Metric Value|lts__|dram__" | head -12
    echo "wall $(echo "$(date +%s.%N) - $s" | bc) s"
  done
  echo "== the same program without ncu"
  s=$(date +%s.%N); python3 -c "$PROG"; echo "wall $(echo "$(date +%s.%N) - $s" | bc) s"
  echo "== python -c pass under ncu (no CUDA)"
  s=$(date +%s.%N); $NCU --metrics dram__bytes_read.sum python3 -c pass > /dev/null 2>&1; echo "wall $(echo "$(date +%s.%N) - $s" | bc) s"
} > "$LOG" 2>&1
cat "$LOG" | tail -60

"""``hipexplore.tuning.models``: the real-model problems behind the shipped lists (Llama 3 8B's
projections, ResNet-50's convolutions as GEMMs) and their candidates."""

from __future__ import annotations

import pytest

from hipexplore.tuning import listfile
from hipexplore.tuning.models import resnet50_convs

pytestmark = pytest.mark.timeout(120)


def test_the_lists_hold_the_real_shapes():
    llama = listfile.read("llama3-8b")
    shapes = {(llama.meta[q.name]["layer"], q.n, q.k, q.epilogue) for q in llama.problems}
    assert shapes == {
        ("qkv", 6144, 4096, "none"),
        ("o_proj", 4096, 4096, "add"),
        ("gate_proj", 14336, 4096, "silu"),
        ("up_proj", 14336, 4096, "mul"),
        ("down_proj", 4096, 14336, "add"),
    }
    assert sorted({p.m for p in llama.problems}) == [1, 16, 64, 256, 1024, 4096, 8192]
    # ResNet-50: 53 convolutions + fc; implicit GEMM M = batch * H_out * W_out, N = C_out, K = C * R * S
    convs = resnet50_convs()
    assert (
        len(convs) == 54
        and sum(c["r"] == 3 for c in convs) == 16
        and sum("downsample" in c["name"] for c in convs) == 4
    )
    rn = listfile.read("resnet50")
    by = {(rn.meta[p.name]["batch"], rn.meta[p.name]["layer"]): p for p in rn.problems}
    conv1 = by[(16, "conv1")]
    assert (conv1.m, conv1.n, conv1.k, conv1.epilogue) == (16 * 112 * 112, 64, 3 * 7 * 7, "bias_relu")
    c2 = by[(1, "layer3.0.conv2")]  # 3x3 stride 2, 256 channels, 28 -> 14
    assert (c2.m, c2.n, c2.k) == (14 * 14, 256, 256 * 9)
    last = by[(1, "layer4.0.conv3")]
    assert (last.m, last.n, last.k, last.epilogue) == (49, 2048, 512, "bias_add_relu")
    fc = by[(16, "fc")]
    assert (fc.m, fc.n, fc.k, fc.epilogue) == (16, 1000, 2048, "bias")
    # convolutions with one GEMM and one tail are one problem, the others named as aliases
    aliases = [a for m in rn.meta.values() for a in m.get("aliases", [])]
    assert "b1.layer1.1.conv2" in aliases and len(rn.problems) + len(aliases) == 2 * len(convs)

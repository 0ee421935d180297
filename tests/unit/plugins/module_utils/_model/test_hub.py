"""The plan reads a checkpoint's own files: from the controller's Hugging Face cache (offline) or from the Hub
through huggingface_hub, here a local test server (hub_server.py) that counts the requests."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import yaml
from script_loader import load_script

from ansible_collections.inferops.llm.plugins.module_utils._model.hub import (
    ModelResolver,
    ModelSourceError,
    Unresolved,
    safetensors_header_bytes,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import load_image_max_pixels
from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

from .hub_server import safetensors_bytes

CONFIGS = Path(__file__).resolve().parents[3] / "fixtures" / "model_configs"
ROOT = Path(__file__).resolve().parents[5]
# The real config.json of Qwen/Qwen3-8B (tests/unit/fixtures/model_configs), as a fine-tune that keeps its
# base's config would publish it: the repo id is not in the catalogue.
REPO = "acme/Qwen3-8B-support-finetune"
CONFIG = (CONFIGS / "Qwen--Qwen3-8B_config.json").read_bytes()
# Qwen/Qwen3-8B model.safetensors.index.json metadata.total_size (5 shards, bf16).
TOTAL_SIZE = 16_381_470_720
SHARDS = [f"model-0000{i}-of-00005.safetensors" for i in range(1, 6)]
COMMIT = "b968826d9c46dd6066d109eabc6255188de91218"
TOKEN = "hf_GatedRepoTokenForTestsOnly0123456789ab"
GPU = {
    "index": 0,
    "name": "NVIDIA RTX A6000",
    "memory_mib": 49140,
    "compute_capability": "8.6",
    "pcie_gen_max": 4,
    "pcie_width_current": 16,
}


def index_json(total: int = TOTAL_SIZE) -> bytes:
    weight_map = {f"model.layers.{i}.mlp.down_proj.weight": SHARDS[i % 5] for i in range(36)}
    return json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}).encode()


def put_in_cache(hub_cache: Path, repo: str, commit: str, files: dict, ref: str = "main") -> Path:
    """Files laid out as huggingface_hub writes them: blobs, snapshot links, refs/<branch>."""
    folder = hub_cache / ("models--" + repo.replace("/", "--"))
    snapshot = folder / "snapshots" / commit
    for name, content in files.items():
        blob = folder / "blobs" / f"blob-{abs(hash((name, content)))}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref:
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / ref).write_text(commit)
    return snapshot


def variables(repo: str = REPO, revision: str = COMMIT, **model) -> dict:
    return {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": repo, "revision": revision, **model},
        "vllm_max_model_len": 8192,
    }


def plan(resolver, **kw) -> dict:
    return build_plan(variables(**kw), {"gpus": [GPU]}, host="h", models=resolver)


@pytest.fixture
def offline(tmp_path):
    return ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})


def online(tmp_path, server, **env):
    return ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_ENDPOINT": server.url, **env}, timeout=5)


# ------------------------------------------------------------------------------------------ the cache, offline


def test_a_model_outside_the_catalogue_plans_from_the_cache_offline(tmp_path, offline):
    put_in_cache(tmp_path / "hub", REPO, COMMIT, {"config.json": CONFIG, "model.safetensors.index.json": index_json()})
    model = plan(offline)["model"]
    assert model["architecture"] == "Qwen3ForCausalLM"
    assert model["weights_bytes"] == TOTAL_SIZE  # the components, scaled to the index, sum to it
    assert model["weights_source"].startswith("safetensors index metadata.total_size, cache ")
    assert f"snapshots/{COMMIT}/model.safetensors.index.json" in model["weights_source"]
    assert model["commit"] == COMMIT
    assert model["config_source"].endswith(
        f"snapshots/{COMMIT}/config.json (commit {COMMIT}); offline (HF_HUB_OFFLINE): read from the cache"
    )


def test_without_a_resolver_the_plan_is_as_before(tmp_path):
    # Goldens and every caller that passes no resolver: inline config or catalogue only, no new keys.
    with pytest.raises(ValueError, match="not in the model catalogue"):
        plan(None)
    model = build_plan(variables("Qwen/Qwen3-8B"), {"gpus": [GPU]}, host="h")["model"]
    assert "commit" not in model and "config_source" not in model


def test_a_branch_is_planned_at_its_commit_and_the_warning_gives_the_sha(tmp_path, offline):
    put_in_cache(tmp_path / "hub", REPO, COMMIT, {"config.json": CONFIG}, ref="main")
    result = plan(offline, revision="main")
    assert result["model"]["commit"] == COMMIT
    assert f"(refs/main -> {COMMIT})" in result["model"]["config_source"]
    warning = next(c for c in result["checks"] if c["id"] == "model-revision")
    assert f"inferops_model.revision: {COMMIT}" in warning["message"]


def test_an_uncached_model_offline_is_an_error_with_the_three_ways(offline):
    with pytest.raises(PlanInputError) as error:
        plan(offline)
    message = str(error.value)
    assert "inferops_model.repo 'acme/Qwen3-8B-support-finetune'" in message
    assert "HF_HUB_OFFLINE" in message
    for way in ("hf download", "inferops_model.config", "inferops_model.base_model"):
        assert way in message


def test_a_catalogued_model_offline_uses_the_catalogue_and_says_so(offline):
    model = plan(offline, repo="Qwen/Qwen3-8B")["model"]
    assert model["config_source"].startswith("catalogue:Qwen/Qwen3-8B (checkpoint not read: HF_HUB_OFFLINE is set")
    assert model["commit"] is None


def test_a_repo_named_for_a_quantization_planned_from_the_catalogue_gets_a_warning(offline):
    # The checkpoint is not read (offline, not cached): the catalogue's unquantized Qwen3-8B stands in.
    named = plan(offline, repo="acme/Qwen3-8B-AWQ", base_model="Qwen/Qwen3-8B")
    (warning,) = [c for c in named["checks"] if c["id"] == "model-quantization-assumed"]
    assert warning["severity"] == "warning" and "inferops_model.repo 'acme/Qwen3-8B-AWQ'" in warning["message"]
    assert warning["message"].endswith('(a value that passes: inferops_model.quantization: "awq")')
    stated = plan(offline, repo="acme/Qwen3-8B-AWQ", base_model="Qwen/Qwen3-8B", quantization="awq")
    assert not [c for c in stated["checks"] if c["id"] == "model-quantization-assumed"]
    assert stated["model"]["weights_bytes"] < named["model"]["weights_bytes"] / 2
    plain = plan(offline, repo="acme/Qwen3-8B-finetune", base_model="Qwen/Qwen3-8B")
    assert not [c for c in plain["checks"] if c["id"] == "model-quantization-assumed"]


def test_inline_config_wins_over_the_cache(tmp_path, offline):
    put_in_cache(tmp_path / "hub", REPO, COMMIT, {"config.json": b"{not json"})
    model = plan(offline, config=json.loads(CONFIG))["model"]
    assert model["config_source"] == "inferops_model.config"


def test_hf_quant_config_beside_the_config_gives_the_scheme(tmp_path, offline):
    nvfp4 = (CONFIGS / "nvidia--Qwen3.6-27B-NVFP4_config.json").read_bytes()
    quant = (CONFIGS / "nvidia--Qwen3.6-35B-A3B-NVFP4_hf_quant_config.json").read_bytes()
    config = {k: v for k, v in json.loads(nvfp4).items() if k != "quantization_config"}
    put_in_cache(
        tmp_path / "hub", REPO, COMMIT, {"config.json": json.dumps(config).encode(), "hf_quant_config.json": quant}
    )
    model = build_plan(
        {**variables(), "vllm_max_model_len": 4096},
        {"gpus": [{**GPU, "memory_mib": 97887, "compute_capability": "12.0"}]},
        models=offline,
    )["model"]
    # ModelOpt MIXED_PRECISION (NVFP4 experts, FP8 attention): read from hf_quant_config.json, as vLLM does
    assert model["quantization"] == "mixed"


# ------------------------------------------------------------------------------------------ bad files


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"config.json": b'{"architectures": ["Qwen3ForCausalLM"],'}, "config.json at .* is not valid JSON"),
        (
            {"config.json": json.dumps({"model_type": "qwen3", "hidden_size": 8}).encode()},
            "has no 'architectures' list",
        ),
        (
            {"config.json": CONFIG, "model.safetensors.index.json": b"[1, 2]"},
            "has no positive integer metadata.total_size",
        ),
        ({"config.json": CONFIG, "model.safetensors": safetensors_bytes({"w": ("BF16", [4, 4])})[:20]}, "cut short"),
    ],
    ids=["malformed-json", "no-architectures", "index-without-total", "truncated-safetensors-header"],
)
def test_bad_files_in_the_cache_are_errors_naming_the_file_and_the_variable(tmp_path, offline, files, expected):
    put_in_cache(tmp_path / "hub", REPO, COMMIT, files)
    with pytest.raises(PlanInputError, match=expected) as error:
        plan(offline)
    assert "inferops_model.repo 'acme/Qwen3-8B-support-finetune'" in str(error.value)
    assert str(tmp_path / "hub") in str(error.value)


def test_a_repo_id_with_dot_dot_is_refused_before_any_file_is_read(offline):
    with pytest.raises(PlanInputError, match=r"inferops_model.repo must be a Hugging Face repository id"):
        plan(offline, repo="acme/../../etc")
    with pytest.raises(ModelSourceError, match=r"inferops_model.repo 'acme/..x'"):
        offline.resolve("acme/..x", "main")


def test_the_safetensors_header_gives_the_exact_tensor_bytes():
    data = safetensors_bytes({"a": ("BF16", [64, 32]), "b": ("F32", [10])})
    assert safetensors_header_bytes(data[:4096], "f", len(data)) == 64 * 32 * 2 + 40
    with pytest.raises(ModelSourceError, match="f: the header's tensors end at byte"):
        safetensors_header_bytes(data, "f", len(data) + 1)


# ------------------------------------------------------------------------------------------ the Hub (test server)


def test_online_the_plan_reads_the_hub_once_and_the_next_plan_is_offline(tmp_path, hub):
    put = {"config.json": CONFIG, "model.safetensors": safetensors_bytes({"w": ("BF16", [128, 64])})}
    commit = hub.add(REPO, put)
    result = plan(online(tmp_path, hub), revision="main")
    model = result["model"]
    assert model["commit"] == commit
    assert model["weights_bytes"] == 128 * 64 * 2  # every tensor's bytes, from the header
    assert model["weights_source"].startswith(f"safetensors header (range request), {hub.url}/{REPO}/resolve/{commit}/")
    assert model["config_source"] == f"{hub.url}/{REPO}/resolve/{commit}/config.json (main -> {commit})"
    requests = [(m, p.split("/resolve/")[-1], r) for m, p, r in hub.requests]
    assert requests[0] == ("GET", f"/api/models/{REPO}/revision/main", None)
    assert ("GET", f"{commit}/model.safetensors", "bytes=0-100000") in requests  # the header only
    assert not any(p.endswith("model.safetensors") and r is None for _m, p, r in requests)
    hub.reset()
    again = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert plan(again, revision="main")["model"]["weights_bytes"] == model["weights_bytes"]
    assert hub.requests == []


def test_online_the_index_gives_the_exact_bytes(tmp_path, hub):
    commit = hub.add(REPO, {"config.json": CONFIG, "model.safetensors.index.json": index_json()})
    model = plan(online(tmp_path, hub), revision=commit)["model"]
    assert model["weights_bytes"] == TOTAL_SIZE
    assert model["weights_source"] == (
        f"safetensors index metadata.total_size, {hub.url}/{REPO}/resolve/{commit}/model.safetensors.index.json"
        f" (commit {commit})"
    )


def test_an_index_that_disagrees_with_its_shards_is_an_error(tmp_path, hub):
    shard = safetensors_bytes({"w": ("BF16", [16, 16])})
    index = json.dumps({"metadata": {"total_size": 10_000}, "weight_map": {"w": "model-1.safetensors"}}).encode()
    hub.add(REPO, {"config.json": CONFIG, "model.safetensors.index.json": index, "model-1.safetensors": shard})
    with pytest.raises(
        PlanInputError,
        match=r"model.safetensors.index.json says metadata.total_size 10000 bytes, but its 1 shard files hold",
    ) as error:
        plan(online(tmp_path, hub), revision="main")
    assert f"inferops_model.repo '{REPO}'" in str(error.value)


def test_a_pinned_sha_that_does_not_exist_names_the_revision(tmp_path, hub):
    hub.add(REPO, {"config.json": CONFIG})
    with pytest.raises(PlanInputError, match=r"inferops_model.revision '0{40}' does not exist in acme/"):
        plan(online(tmp_path, hub), revision="0" * 40)


def test_the_checkpoint_contradicting_the_inventory_quantization_is_refused(tmp_path, hub):
    awq = {**json.loads(CONFIG), "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}
    hub.add(REPO, {"config.json": json.dumps(awq).encode()})
    with pytest.raises(
        PlanInputError, match=r"inferops_model.quantization is 'fp8' but the checkpoint has awq \(awq_int4\)"
    ):
        plan(online(tmp_path, hub), revision="main", quantization="fp8")
    assert plan(online(tmp_path, hub), revision="main", quantization="awq")["model"]["quantization"] == "awq"


def test_a_gated_repo_without_a_token_is_an_error_and_with_one_the_token_stays_out(tmp_path, hub):
    hub.add(REPO, {"config.json": CONFIG}, token=TOKEN)
    with pytest.raises(PlanInputError) as error:
        plan(online(tmp_path / "a", hub), revision="main")
    message = str(error.value)
    assert "inferops_model.repo 'acme/Qwen3-8B-support-finetune' is gated or private" in message
    assert "HF_TOKEN" in message and "inferops_hf_token" in message and f"{hub.url}/{REPO}" in message
    hub.reset()
    result = plan(online(tmp_path / "b", hub, HF_TOKEN=TOKEN), revision="main")
    assert result["model"]["architecture"] == "Qwen3ForCausalLM"
    assert set(hub.authorizations) == {f"Bearer {TOKEN}"}
    assert TOKEN not in json.dumps(result)


def test_a_gated_catalogued_repo_falls_back_to_the_catalogue_with_a_warning(tmp_path, hub):
    hub.add("Qwen/Qwen3-8B", {"config.json": CONFIG}, token=TOKEN)
    result = plan(online(tmp_path, hub), repo="Qwen/Qwen3-8B", revision="main")
    assert result["model"]["config_source"].startswith("catalogue:Qwen/Qwen3-8B (checkpoint not read: ")
    assert [c["severity"] for c in result["checks"] if c["id"] == "model-source"] == ["warning"]


def test_an_unreachable_hub_is_asked_once_and_the_plan_says_so(tmp_path, hub):
    resolver = ModelResolver.from_environment(
        {"HF_HOME": str(tmp_path), "HF_ENDPOINT": "http://127.0.0.1:9"}, timeout=2
    )
    first = resolver.resolve(REPO, "main")
    assert isinstance(first, Unresolved) and first.reason == "unreachable"
    assert isinstance(resolver.resolve("acme/other", "main"), Unresolved)  # not asked again this run
    model = plan(resolver, repo="Qwen/Qwen3-8B", revision="main")["model"]
    assert "http://127.0.0.1:9 did not answer" in model["config_source"]


def test_200_hosts_with_6_models_make_6_sets_of_requests(tmp_path, hub):
    repos = [f"acme/model-{n}" for n in range(6)]
    for repo in repos:
        hub.add(repo, {"config.json": CONFIG, "model.safetensors.index.json": index_json()})
    members = [
        Member(
            host=f"h{i:03d}",
            variables=variables(repos[i % 6], "main"),
            hardware={"gpus": [GPU]},
            facts={},
            defined=None,
        )
        for i in range(200)
    ]
    planned = plan_fleet(members, {}, online(tmp_path, hub))
    assert all("plan" in entry for entry in planned.values()), next(
        iter(e for e in planned.values() if "errors" in e), None
    )
    info = [p for m, p, _r in hub.requests if p.startswith("/api/models/")]
    assert sorted(info) == sorted(f"/api/models/{repo}/revision/main" for repo in repos)
    # each model: 1 metadata request + HEAD and GET of config.json and of the index
    assert len(hub.requests) == 6 * 5


def test_the_image_processor_config_is_fetched_beside_the_config(tmp_path, hub):
    qwen35 = (CONFIGS / "Qwen--Qwen3.5-27B_config.json").read_bytes()
    processor = json.dumps({"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16}).encode()
    hub.add(REPO, {"config.json": qwen35, "preprocessor_config.json": processor, "README.md": b"# card"})
    checkpoint = online(tmp_path, hub).resolve(REPO, "main")
    assert load_image_max_pixels({"config_file": checkpoint.config_file}) == 16777216
    assert not any(p.endswith("README.md") for _m, p, _r in hub.requests)  # only the files the plan reads


# ------------------------------------------------------------------------------------------ the Molecule mirror's model


def _tiny_qwen2():
    """tests/models/tiny_qwen2.py, the checkpoint that scenario vllm_cpu_serving serves from its mirror."""
    return load_script(ROOT / "tests" / "models" / "tiny_qwen2.py", "tiny_qwen2")


def test_the_mirrors_tiny_model_plans_from_repo_and_revision_alone(tmp_path, hub):
    # The scenario's own inventory (extensions/molecule/vllm_cpu_serving/molecule.yml), its checkpoint written by
    # the scenario's script, served at the scenario's commit; the plan is given repo + revision only (the scenario
    # passes config_file) and reads the rest through huggingface_hub, as with HF_ENDPOINT at the mirror.
    scenario = yaml.safe_load((ROOT / "extensions" / "molecule" / "vllm_cpu_serving" / "molecule.yml").read_text())
    group_vars = scenario["provisioner"]["inventory"]["group_vars"]
    repo, commit = group_vars["all"]["tiny_repo"], group_vars["all"]["tiny_commit"]
    tiny = _tiny_qwen2()
    files = tiny.files()
    assert hub.add(repo, files, commit=commit) == commit
    host = {**group_vars["debian"], "inferops_model": {"repo": repo, "revision": commit}}

    result = build_plan(host, {}, host="h", models=online(tmp_path, hub))
    model = result["model"]
    url = f"{hub.url}/{repo}/resolve/{commit}"
    assert model["architecture"] == "Qwen2ForCausalLM" and model["commit"] == commit
    assert model["config_source"] == f"{url}/config.json (commit {commit})"
    # every tensor of model.safetensors, from its header: 1,313,024 bf16 parameters (tiny_qwen2.py)
    assert model["weights_bytes"] == 2 * sum(math.prod(shape) for shape in tiny.tensor_shapes().values()) == 2_626_048
    assert model["weights_source"] == f"safetensors header (range request), {url}/model.safetensors (commit {commit})"
    assert [c for c in result["checks"] if c["severity"] == "error"] == []
    assert sorted((m, p.rsplit("/", 1)[-1], r) for m, p, r in hub.requests) == [
        ("GET", commit, None),  # /api/models/<repo>/revision/<commit>
        ("GET", "config.json", None),
        ("GET", "model.safetensors", "bytes=0-100000"),  # the header, not the 2.6 MB file
        ("HEAD", "config.json", None),
    ]

    # The scenario's way (config_file on the controller) plans the same engine settings; the next plan is offline.
    (tmp_path / "ckpt").mkdir()
    for name, content in files.items():
        (tmp_path / "ckpt" / name).write_bytes(content)
    inline = {
        **host,
        "inferops_model": {"repo": repo, "revision": commit, "config_file": str(tmp_path / "ckpt/config.json")},
    }
    by_config_file = build_plan(inline, {}, host="h")
    assert [by_config_file[k] for k in ("layout", "settings", "command")] == [
        result[k] for k in ("layout", "settings", "command")
    ]
    hub.reset()
    again = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert build_plan(host, {}, host="h", models=again)["model"]["weights_bytes"] == model["weights_bytes"]
    assert hub.requests == []

"""tests/bin/run-stages: the order in which `make test`'s workers take the stages and scenarios."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from script_loader import load_script

SCRIPT = Path(__file__).resolve().parents[3] / "tests" / "bin" / "run-stages"


@pytest.fixture(name="run_stages")
def fixture_run_stages(monkeypatch):
    module = load_script(SCRIPT, "run_stages", monkeypatch)  # dataclasses look their module up in sys.modules
    monkeypatch.setattr(module, "ceilings", lambda: {"slow": 900, "medium": 400})
    return module


def names(jobs) -> list[str]:
    return [job.name for job in jobs]


def test_images_then_the_longest_scenario_then_the_checks_then_the_other_scenarios(run_stages, monkeypatch):
    monkeypatch.setenv("SCENARIOS", "fast medium slow")
    needs = {
        "slow": ("images-debian13",),
        "medium": ("images-debian12",),
        "fast": ("images-debian12", "images-debian13"),
    }
    monkeypatch.setattr(run_stages, "scenario_images", needs.get)
    jobs = run_stages.plan_jobs(["venv", "lint", "units", "molecule"])
    assert names(jobs) == ["images-debian13", "slow", "images-debian12", "lint", "units", "medium", "fast"]
    assert [job.needs for job in jobs if job.kind == "scenario"] == [needs["slow"], needs["medium"], needs["fast"]]
    # one image build at a time
    assert jobs[2].needs == ("images-debian13",)
    assert jobs[0].argv[-1] == "IMAGES=debian13"
    assert jobs[1].argv[-1] == "molecule destroy -s slow && exec molecule test -s slow --destroy never"


def test_each_scenario_waits_for_the_images_of_its_platforms(run_stages):
    assert run_stages.scenario_images("vllm_cpu_serving") == ("images-debian12",)
    assert run_stages.scenario_images("ollama") == ("images-debian13",)
    assert run_stages.scenario_images("model_download") == ("images-debian13",)
    # no platforms of its own: those of extensions/molecule/config.yml
    assert run_stages.scenario_images("nvidia_driver") == ("images-debian12", "images-debian13")


def test_without_molecule_no_images(run_stages):
    jobs = run_stages.plan_jobs(["venv", "lint", "build"])
    assert names(jobs) == ["lint", "build"]


def test_every_scenario_directory_by_default(run_stages, monkeypatch):
    monkeypatch.delenv("SCENARIOS", raising=False)
    found = run_stages.scenarios()
    assert "vllm_cpu_serving" in found and "gpu_facts" in found
    assert found == sorted(found)


def test_a_failed_input_fails_its_dependants_without_running_them(run_stages, tmp_path, monkeypatch):
    monkeypatch.setattr(run_stages, "LOGS", tmp_path)
    images = run_stages.Job("images", ["false"], "stage", status="FAILED")
    scenario = run_stages.Job("slow", ["molecule"], "scenario", ("images",))
    runner = run_stages.Runner([images, scenario], 1)
    assert runner.next_job() is None
    assert scenario.status == "FAILED"
    assert "images failed" in (tmp_path / "slow.log").read_text()


class FakeWatch:
    """A DiskWatch's figures without sampling: 50 GiB free at the start."""

    def __init__(self, lowest_gib: float) -> None:
        self.start_free = 50 * 2**30
        self.lowest_free = int(lowest_gib * 2**30)
        self.peak_gib = 50 - lowest_gib


@pytest.mark.parametrize(
    ("budget", "lowest_gib", "verdict", "says"),
    [
        ("disk_gib: 30\n", 25, 0, "use rose by 25.0 GiB at its peak (free at the start 50.0 GiB, lowest 25.0 GiB)"),
        ("disk_gib: 20\n", 25, 1, "over the budget of 20 GiB"),
        ("total: 3600\n", 1, 0, "use rose by 49.0 GiB"),
    ],
    ids=["within the budget", "over the budget", "no disk budget: printed only"],
)
def test_the_disk_peak_is_printed_and_checked_against_disk_gib(
    run_stages, tmp_path, capsys, budget, lowest_gib, verdict, says
):
    budget_file = tmp_path / "time-budget.yml"
    budget_file.write_text(budget)
    assert run_stages.check_disk(FakeWatch(lowest_gib), budget_file) == verdict
    assert says in capsys.readouterr().out


def test_the_disk_watch_samples_the_peak_of_used_space_and_the_lowest_free(run_stages, tmp_path, monkeypatch):
    gib = 2**30
    # (used, free): the quota shrinks free space by 5 GiB more than the run's own files grow
    samples = iter([(10 * gib, 40 * gib), (25 * gib, 20 * gib), (18 * gib, 30 * gib)] + [(12 * gib, 38 * gib)] * 1000)
    monkeypatch.setattr(run_stages.DiskWatch, "usage", lambda self: next(samples))
    with run_stages.DiskWatch(tmp_path, every=0.01) as watch:
        time.sleep(0.2)
    assert watch.start_free == 40 * gib
    assert watch.lowest_free == 20 * gib
    assert watch.peak_gib == 15


def stat_line(busy: int, idle: int) -> str:
    """/proc/stat's first line: user nice system idle iowait irq softirq steal."""
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"


def test_the_cpu_watch_reports_busy_share_and_time_with_an_idle_core(run_stages, tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text(stat_line(0, 0))
    monkeypatch.setattr(run_stages.os, "cpu_count", lambda: 2)
    watch = run_stages.CpuWatch(every=3600, stat=stat)
    # 10 s on 2 cores (2000 jiffies): both busy
    stat.write_text(stat_line(2000, 0))
    watch.take()
    # 10 s more: one core busy, one idle
    stat.write_text(stat_line(3000, 1000))
    watch.take()
    # 10 s more: 1.5 cores busy (less than one whole core idle)
    stat.write_text(stat_line(4500, 1500))
    watch.take()
    assert watch.sampled_seconds == pytest.approx(30.0)
    assert watch.core_idle_seconds == pytest.approx(10.0)
    summary = watch.summary()
    assert "2 cores 75% busy" in summary
    assert "4500 core-seconds busy" not in summary and "45 core-seconds busy, 15 idle" in summary
    assert "at least one core idle 33% of the time" in summary


def test_idle_cores_average_the_newest_samples_that_cover_the_window(run_stages, tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text(stat_line(0, 0))
    monkeypatch.setattr(run_stages.os, "cpu_count", lambda: 2)
    watch = run_stages.CpuWatch(every=3600, stat=stat)
    assert watch.idle_cores(20) == 0.0  # nothing sampled yet: no room
    # 10 s with both cores idle, then 10 s with one busy, then 10 s with both busy
    for busy, idle in [(0, 2000), (1000, 3000), (3000, 3000)]:
        stat.write_text(stat_line(busy, idle))
        watch.take()
    assert watch.idle_cores(10) == pytest.approx(0.0)
    assert watch.idle_cores(20) == pytest.approx(0.5)
    assert watch.idle_cores(30) == pytest.approx(1.0)
    assert watch.idle_cores(40) == 0.0  # the samples do not cover 40 s


class FixedIdle:
    """A CpuWatch that always reports the same idle cores."""

    def __init__(self, idle: float) -> None:
        self.idle = idle

    def idle_cores(self, window: float) -> float:
        return self.idle


def meminfo(tmp_path: Path, available_kib: int) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       25165824 kB\nMemFree:          100000 kB\nMemAvailable:   {available_kib} kB\n")
    return path


@pytest.mark.parametrize(
    ("idle", "available_gib", "admitted"),
    [(1.2, 10, True), (0.5, 10, False), (1.2, 2, False)],
    ids=["an idle core and memory", "busy cores", "too little memory"],
)
def test_the_room_admits_a_job_only_with_an_idle_core_and_memory(run_stages, tmp_path, idle, available_gib, admitted):
    room = run_stages.Room(FixedIdle(idle), meminfo=meminfo(tmp_path, available_gib * 2**20))
    why = room.admits()
    assert (why is not None) == admitted
    if admitted:
        assert why == f"{idle:.1f} cores idle over the last 20 s, {available_gib:.1f} GiB of memory available"


def test_the_room_waits_before_admitting_a_second_job(run_stages, tmp_path):
    room = run_stages.Room(FixedIdle(2.0), settle=3600, meminfo=meminfo(tmp_path, 10 * 2**20))
    assert room.admits() is not None
    assert room.admits() is None  # the first job has not shown in the watch's figures yet
    room.last_admitted -= 3600
    assert room.admits() is not None


def test_a_spare_worker_takes_a_ready_job_only_when_the_room_admits_it(run_stages, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_stages, "LOGS", tmp_path)
    monkeypatch.setattr(run_stages.time, "sleep", lambda _s: None)
    job = run_stages.Job("lint", ["true"], "stage")
    answers = iter([None, None, "1.5 cores idle"])
    room = type("Room", (), {"admits": lambda self: next(answers)})()
    runner = run_stages.Runner([job], 1, 1, room)
    assert runner.next_job(room) is job
    assert job.status == "running"
    assert next(answers, "asked no more") == "asked no more"  # refused twice, taken at the third ask
    assert "[lint] ==== taken by a spare worker: 1.5 cores idle" in capsys.readouterr().out


def test_spare_workers_need_a_room(run_stages):
    assert run_stages.Runner([], 2, 1).spare == 0


def test_instance_names_are_the_platforms_of_the_scenario_or_of_the_base_config(run_stages):
    assert run_stages.instance_names("ray_cluster") == ["inferops-ray-head", "inferops-ray-w1"]
    assert run_stages.instance_names("nvidia_driver") == [
        "inferops-nvidia_driver-debian12",
        "inferops-nvidia_driver-debian13",
    ]


def test_container_cpu_is_read_from_each_instance_cgroup(run_stages, tmp_path, monkeypatch):
    v1 = tmp_path / "v1" / "{id}" / "cpuacct.usage"
    v2 = tmp_path / "v2" / "{id}" / "cpu.stat"
    for path, container, text in ((v1, "aaa", "2500000000\n"), (v2, "bbb", "usage_usec 1500000\nuser_usec 1\n")):
        real = Path(str(path).format(id=container))
        real.parent.mkdir(parents=True)
        real.write_text(text)
    monkeypatch.setattr(run_stages, "CGROUP_USAGE", ((str(v1), 1e-9), (str(v2), 1e-6)))

    def inspect(argv, **_kwargs):
        assert argv[:2] == ["docker", "inspect"] and argv[-2:] == ["one", "two"]
        return run_stages.subprocess.CompletedProcess(argv, 0, stdout="aaa\nbbb\nccc\n", stderr="")

    monkeypatch.setattr(run_stages.subprocess, "run", inspect)
    # ccc has no cgroup here: not counted
    assert run_stages.container_cpu_seconds(["one", "two"]) == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("containers", "state", "why"),
    [
        ("", None, None),
        ("", "created: false\nconverged: false\n", None),
        ("", "created: true\n", "a Molecule state of created instances"),
        ("", "created: [\n", "an unreadable Molecule state"),
        ("4f2a\n", None, "a container of its instances"),
    ],
    ids=["fresh", "destroyed by an earlier run", "instances gone, state left", "broken state", "a container left"],
)
def test_a_scenario_is_destroyed_first_only_where_an_earlier_run_left_something(
    run_stages, tmp_path, monkeypatch, containers, state, why
):
    home = tmp_path / "home"
    monkeypatch.setenv("ANSIBLE_HOME", str(home))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    if state is not None:
        (home / "tmp" / "molecule.0Jir.ray_cluster").mkdir(parents=True)
        (home / "tmp" / "molecule.0Jir.ray_cluster" / "state.yml").write_text(state)
    # another scenario's state is not this one's
    (home / "tmp" / "molecule.0Jir.vllm").mkdir(parents=True)
    (home / "tmp" / "molecule.0Jir.vllm" / "state.yml").write_text("created: true\n")

    def docker_ps(argv, **_kwargs):
        assert argv[:4] == ["docker", "ps", "--all", "--quiet"]
        assert argv[4:] == ["--filter=name=^/inferops-ray-head$", "--filter=name=^/inferops-ray-w1$"]
        return run_stages.subprocess.CompletedProcess(argv, 0, stdout=containers, stderr="")

    monkeypatch.setattr(run_stages.subprocess, "run", docker_ps)
    found = run_stages.left_over("ray_cluster")
    assert found is None if why is None else found.startswith(why), found
    steps = run_stages.scenario_steps("ray_cluster", destroy_first=found is not None)
    assert steps.endswith("exec molecule test -s ray_cluster --destroy never")
    assert steps.startswith("molecule destroy -s ray_cluster && ") == (why is not None)


def test_a_job_records_its_exit_status_and_cpu_time(run_stages, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_stages, "LOGS", tmp_path)
    monkeypatch.setattr(run_stages, "TIMINGS", tmp_path)
    busy = run_stages.Job("busy", [sys.executable, "-c", "sum(range(3 * 10**7))"], "stage")
    failing = run_stages.Job("failing", [sys.executable, "-c", "raise SystemExit(3)"], "stage")
    runner = run_stages.Runner([busy, failing], 1)
    runner.run_job(busy)
    runner.run_job(failing)
    assert busy.status == "ok" and failing.status == "FAILED"
    assert busy.cpu_seconds > 0.1
    rows = [line.split("\t") for line in (tmp_path / "cpu.tsv").read_text().splitlines()]
    assert [row[0] for row in rows] == ["busy", "failing"]
    assert "FAILED (exit 3)" in capsys.readouterr().out


def test_a_compat_scenario_runs_with_the_oldest_cores_ansible_playbook(run_stages, tmp_path, monkeypatch):
    """$COMPAT_SCENARIOS run with $COMPAT_VENV's ansible-playbook first on PATH (made by `make compat-env`), the
    toolchain's molecule and collections; the strategy is left to the scenario (no INFEROPS_MOLECULE_STRATEGY); the log
    names the core. Run for real with stand-ins for make, molecule and the core's ansible-playbook, and the toolchain's
    python."""
    tools, venv = tmp_path / "tools", tmp_path / "venv-core"
    for directory in (tools, venv / "bin"):
        directory.mkdir(parents=True)
    scripts = {
        tools / "make": 'echo "make $*" >> "$LOG"',
        tools / "molecule": (
            'echo "molecule $* PATH=${PATH%%:*} COLLECTIONS=$ANSIBLE_COLLECTIONS_PATH'
            ' STRATEGY=$INFEROPS_MOLECULE_STRATEGY" >> "$LOG"'
        ),
        tools / "python": "echo /toolchain/site-packages",
        venv / "bin" / "ansible-playbook": 'echo "ansible-playbook [core 2.19.14]"',
    }
    for path, body in scripts.items():
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    monkeypatch.setenv("COMPAT_VENV", str(venv))
    monkeypatch.setenv("COMPAT_SCENARIOS", "ollama gateway")
    assert run_stages.scenario_steps("vllm") == "molecule destroy -s vllm && exec molecule test -s vllm --destroy never"
    log = tmp_path / "log"
    # another python first on PATH, as pyenv's shim leaves it: the toolchain's is the one beside molecule
    other = tmp_path / "other"
    other.mkdir()
    (other / "python").write_text("#!/bin/sh\necho /other/site-packages\n")
    (other / "python").chmod(0o755)
    env = {
        "PATH": f"{other}:{tools}:/usr/bin:/bin",
        "LOG": str(log),
        "ANSIBLE_COLLECTIONS_PATH": "/checkout/collections",
    }
    result = subprocess.run(["sh", "-c", run_stages.scenario_steps("ollama")], env=env, capture_output=True,
                            text=True, check=True)  # fmt: skip
    assert result.stdout == "with ansible-playbook [core 2.19.14]\n"
    collections = "/checkout/collections:/toolchain/site-packages"
    assert log.read_text().splitlines() == [
        "make --no-print-directory compat-env",
        f"molecule destroy -s ollama PATH={venv}/bin COLLECTIONS={collections} STRATEGY=",
        f"molecule test -s ollama --destroy never PATH={venv}/bin COLLECTIONS={collections} STRATEGY=",
    ]


def test_the_pace_is_the_cpu_time_of_the_fixed_loop(run_stages, monkeypatch):
    monkeypatch.setattr(run_stages, "PACE_CODE", "sum(range(3 * 10**7))")
    loop = run_stages.pace()
    monkeypatch.setattr(run_stages, "PACE_CODE", "pass")
    assert loop > run_stages.pace() > 0

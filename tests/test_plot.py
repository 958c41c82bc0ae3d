import json

import pytest

from genenv.plot import PANELS, main


def _run(path, curriculum, p_hats):
    path.mkdir()
    lines = [
        {
            "epoch": e,
            "curriculum": curriculum,
            "p_hat": p,
            "r_env": 0.5,
            "in_band": 1,
            "fresh_tasks": 4,
            "p_hat_per_task": [0.0, 0.25, 0.5, 1.0],
            "validation": {"score": 0.1 * e, "score/level-0": 0.2 * e, "score/level-1": 0.0},
            "task_length_tokens": 40 + e,
            "simulator": {"kl": 0.01 * e},
            "fresh_per_family": {"add@0": 2 - min(e, 2), "add@1": 1 + e, "count": 1},
        }
        for e, p in enumerate(p_hats)
    ]
    (path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_plots_one_png_per_panel_for_several_runs(tmp_path, capsys):
    runs = [_run(tmp_path / "g", "genenv", [0.1, 0.4, 0.5]), _run(tmp_path / "r", "random", [0.1, None, 0.2])]
    main([str(r) for r in runs] + ["--out", str(tmp_path / "plots")])
    written = capsys.readouterr().out.split()
    names = [f"{name}.png" for name in PANELS] + ["task_mix.png", "validation_groups.png"]
    assert [p.rsplit("/", 1)[-1] for p in written] == names
    assert all((tmp_path / "plots" / f"{name}.png").stat().st_size > 5000 for name in PANELS)


def test_run_without_metrics_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="no metrics.jsonl"):
        main([str(tmp_path / "empty")])


def test_task_mix_groups_levels():
    from genenv.plot import mix_group

    assert mix_group("chain_sum@2") == "level 2" and mix_group("Calculator") == "Calculator"


def test_a_one_epoch_run_is_plotted_at_whole_epochs(tmp_path, monkeypatch):
    import genenv.plot as module

    saved = {}

    def keep(fig, path):
        saved[path.name] = fig
        return path

    monkeypatch.setattr(module, "save_figure", keep)
    main([str(_run(tmp_path / "g", "genenv", [0.3])), "--out", str(tmp_path / "plots")])
    for name in [f"{name}.png" for name in PANELS] + ["task_mix.png", "validation_groups.png"]:
        ax = saved[name].axes[0]
        low, high = ax.get_xlim()
        assert [t for t in ax.get_xticks() if low <= t <= high] == [0], name

"""`python -m pipeline.report` (make report): heatmaps of success over H x B per agent and
domain (like the paper's figure 8), a domain x agent table and a markdown summary with the
checks that the two axes work."""

from __future__ import annotations

import time
from pathlib import Path

import hydra
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from pipeline.cli import run_cli  # noqa: E402
from pipeline.config import register_configs  # noqa: E402

register_configs()


def load_runs(root: Path) -> pl.DataFrame:
    files = sorted(root.glob("*/results.parquet"))
    if not files:
        raise FileNotFoundError(f"no <agent>/results.parquet under {root}; run `make eval` first")
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")


def heatmap(frame: pl.DataFrame, agent: str, rate: float, out: Path) -> Path:
    part = frame.filter((pl.col("agent") == agent) & (pl.col("failure_rate") == rate))
    domains = sorted(set(part["domain"].to_list())) + ["all"]
    hidden = sorted(set(part["hidden_slots"].to_list()))
    budgets = sorted(set(part["decoy_budget"].to_list()))
    figure, axes = plt.subplots(1, len(domains), figsize=(3.2 * len(domains), 3.4), squeeze=False)
    for axis, domain in zip(axes[0], domains, strict=True):
        cells = part if domain == "all" else part.filter(pl.col("domain") == domain)
        grid = [[_mean(cells, h, b) for b in budgets] for h in hidden]
        image = axis.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto", origin="lower")
        axis.set_xticks(range(len(budgets)), [str(b) for b in budgets], fontsize=7)
        axis.set_yticks(range(len(hidden)), [str(h) for h in hidden], fontsize=7)
        axis.set_title(domain, fontsize=9)
        axis.set_xlabel("decoy budget B", fontsize=8)
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                if value == value:  # not NaN
                    axis.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=6,
                              color="white" if value < 0.5 else "black")  # fmt: skip
    axes[0][0].set_ylabel("hidden slots H", fontsize=8)
    figure.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="success")
    figure.suptitle(f"{agent}, tool failure rate {rate}", fontsize=10)
    path = out / f"heatmap_{agent}_p{rate}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _mean(cells: pl.DataFrame, hidden: int, budget: int) -> float:
    part = cells.filter((pl.col("hidden_slots") == hidden) & (pl.col("decoy_budget") == budget))
    mean = part["success"].cast(pl.Float64).mean()
    return float(mean) if part.height and isinstance(mean, int | float) else float("nan")


def markdown_table(frame: pl.DataFrame, index: str, columns: str, value: str, fmt: str) -> str:
    pivot = frame.group_by([index, columns]).agg(pl.col(value).mean()).sort([index, columns])
    keys = sorted(set(pivot[columns].to_list()))
    lines = [f"| {index} | " + " | ".join(str(k) for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for name in sorted(set(pivot[index].to_list())):
        row = pivot.filter(pl.col(index) == name)
        values = {r[columns]: r[value] for r in row.iter_rows(named=True)}
        lines.append(f"| {name} | " + " | ".join(format(values[k], fmt) if k in values else ""
                                                 for k in keys) + " |")  # fmt: skip
    return "\n".join(lines)


def evidence(frame: pl.DataFrame) -> list[str]:
    """The checks that B controls difficulty and H controls length, per failure rate."""
    lines = []
    for rate in sorted(set(frame["failure_rate"].to_list())):
        part = frame.filter(pl.col("failure_rate") == rate)
        lines.append(f"\n### Tool failure rate {rate}\n")
        greedy = part.filter(pl.col("agent") == "greedy_local")
        if greedy.height:
            by_b = greedy.group_by("decoy_budget").agg(pl.col("success").mean()).sort("decoy_budget")
            rho = greedy.select(pl.corr("decoy_budget", pl.col("success").cast(pl.Float64),
                                        method="spearman")).item()
            lines.append("- greedy_local success by B: " + ", ".join(
                f"B={b}: {s:.2f}" for b, s in by_b.iter_rows())
                + f" -> Spearman rho(B, success) = {rho:.2f}; falls with B: **{rho < 0}**")
        search = part.filter(pl.col("agent") == "search")
        if search.height:
            by_h = search.group_by("hidden_slots").agg(pl.col("steps").mean()).sort("hidden_slots")
            steps = by_h["steps"].to_list()
            grows = all(a < b for a, b in zip(steps, steps[1:], strict=False))
            lines.append("- search steps by H: " + ", ".join(
                f"H={h}: {s:.0f}" for h, s in by_h.iter_rows()) + f" -> grow with H: **{grows}**")
            rate_solved = search["success"].cast(pl.Float64).sum() / search.height
            lines.append(f"- search success (unlimited budgets): {rate_solved:.3f} "
                         f"over {search.height} episodes")
        for agent in sorted(a for a in set(part["agent"].to_list()) if a.startswith("shortcut")):
            rows = part.filter(pl.col("agent") == agent)
            cells = int(rows["decoy_cells"].sum())
            if cells:
                hit = float(rows["decoy_cells_correct"].sum()) / float(cells)
                chance = float(rows["decoy_cells_chance"].sum()) / float(cells)
                lines.append(f"- {agent}: truth picked on {hit:.3f} of {cells} decoy cells "
                             f"(chance {chance:.3f})")
    return lines


def report(cfg: DictConfig) -> int:
    start = time.perf_counter()
    frame = load_runs(Path(str(cfg.runs_root)))
    out = Path(str(cfg.output))
    out.mkdir(parents=True, exist_ok=True)
    images = [heatmap(frame, agent, rate, out)
              for agent in sorted(set(frame["agent"].to_list()))
              for rate in sorted(set(frame.filter(pl.col("agent") == agent)["failure_rate"].to_list()))]
    base = frame.filter(pl.col("failure_rate") == 0.0)
    text = ["# Evaluation report", "", f"Runs: `{cfg.runs_root}` ({frame.height} episodes).", "",
            "## Success by domain and agent (failure rate 0)", "",
            markdown_table(base, "domain", "agent", "success", ".3f"), "",
            "## Mean steps by H and agent (failure rate 0)", "",
            markdown_table(base, "hidden_slots", "agent", "steps", ".0f"), "",
            "## Do the axes work?", *evidence(frame), "", "## Heatmaps", ""]
    text += [f"![{p.stem}]({p.name})" for p in images]
    (out / "summary.md").write_text("\n".join(text) + "\n")
    print(f"report -> {out / 'summary.md'} ({len(images)} heatmaps, {time.perf_counter() - start:.1f}s)")
    print("\n".join(evidence(frame)))
    return 0


@hydra.main(version_base=None, config_path="../conf/apps", config_name="report")
def main(cfg: DictConfig) -> None:
    run_cli(report, cfg)


if __name__ == "__main__":
    main()

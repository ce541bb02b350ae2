"""What the profile Job of one model measures (planning.profile, docs/measurements.md "Profiling on the cluster").

Pure (no Pulumi). From the planner's feasible shapes, cheapest first (planner/search.candidate_shapes):

* only those on the planned instance type: the Job runs on the model's own GPU pool;
* one per TP x PP: planning.measurements match a shape by GPU, TP, PP and precision (planner/measured.py), not by
  KV-cache dtype, so two KV dtypes of one TP would be read as one shape; the cheaper one's arguments are run;
* ranked as the estimate ranks them (the request without planning.measurements), so the set a profile measures does
  not move as its own results come in: once they are all measured, no Job runs;
* the first `candidates` of those that run on one node; a multi-node one (PP > 1) ranked among them is skipped with the
  reason (the Job starts one node's engine), one already measured (planning.measurements holds it) counts but is not
  run again.

Each shape runs its planned `vllm serve` arguments except --max-num-seqs, which is the sweep's top level (the shape's
KV limit; engine.maxNumSeqs where the stack sets it): run at the estimated knee, the engine would queue every level
above it and a measured knee could never exceed the estimate. The levels are bench/bench_serve.py's: 1, 2, 4, ... up
to the KV limit.

A model with nothing left to run but a multi-node shape is refused (ProfileRefused, the reason); one whose every
candidate is measured needs no Job (plan_profile returns a ProfilePlan with no shapes).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..planner.capacity import sweep_levels
from ..planner.request import PlanRequest
from ..planner.search import CandidateShape, candidate_shapes, evaluate
from ..planner.topology import Topology

FIX = ("list the models a single node serves under planning.profile.models, or measure the deployed replica with "
       "bench/bench_serve.py --base-url (docs/measurements.md)")


class ProfileRefused(Exception):
    """The model cannot be profiled by the Job: the message says why."""


@dataclass(frozen=True)
class ProfileShape:
    id: str  # e.g. l4-tp2, h100-tp1-fp8kv: the rows file's name and the rows' ids
    label: str
    tp: int
    pp: int
    kv_cache_dtype: str
    max_num_seqs: int
    levels: tuple[int, ...]
    args: tuple[str, ...]  # `vllm serve` arguments (after `vllm serve`)


@dataclass(frozen=True)
class ProfilePlan:
    deployment: str
    model: str  # catalog id (the rows' model)
    served: str
    tokenizer: str
    precision: str
    instance_type: str
    accelerator: str
    gpus_per_node: int
    price_per_node_hour: float
    prompt_tokens: int
    output_tokens: int
    max_model_len: int
    out_dir: str
    max_minutes: int
    max_minutes_per_shape: int
    shapes: tuple[ProfileShape, ...]
    skipped: tuple[tuple[str, str], ...] = ()  # (shape label, why it is not run)
    measured: tuple[str, ...] = ()  # shapes planning.measurements already holds: not run again
    sized_pool: bool = True  # the stack sizes the GPU pool (EKS / GKE); False: an existing cluster's nodes
    no_room: str = ""  # why the pool cannot grow for the Job (existing cluster, reservation), "" where it can
    priority_class: str = ""  # the profile pods' PriorityClass (serving/profile.py)

    @property
    def gpus(self) -> int:
        """The Job's GPU limit: its largest shape's."""
        return max((s.tp * s.pp for s in self.shapes), default=0)

    @property
    def hours(self) -> float:
        return self.max_minutes / 60

    @property
    def cost_bound(self) -> float:
        """One GPU node for the Job's whole bound: what it costs at most, added node or not."""
        return self.price_per_node_hour * self.hours

    @property
    def deadline_s(self) -> int:
        return self.max_minutes * 60

    def lines(self) -> list[str]:
        """What the plan says before `pulumi up` runs the Job."""
        who = f"planning.profile {self.deployment}"
        out = [f"{who}: {'; '.join(self.measured)} measured (planning.measurements): not run again"
               ] if self.measured else []
        out += [f"{who}: {label} skipped: {why}" for label, why in self.skipped]
        if not self.shapes:
            return out + [f"{who}: every candidate shape is measured: no Job; set planning.profile.enabled: false "
                          f"(or drop {self.deployment} from planning.profile.models)"]
        shapes = ", ".join(f"{s.label} (concurrency {s.levels[0]}-{s.levels[-1]})" for s in self.shapes)
        price = (f"${self.cost_bound:,.2f}: one {self.instance_type} at ${self.price_per_node_hour:,.2f}/h for "
                 f"{self.hours:g} h" if self.price_per_node_hour else
                 f"{self.hours:g} h of one {self.instance_type} (unpriced)")
        out.append(f"{who}: `pulumi up` runs Job profile-{self.deployment} on the {self.instance_type} pool "
                   f"({self.gpus} of {self.gpus_per_node} {self.accelerator} GPUs) measuring {len(self.shapes)} "
                   f"shape(s) at {self.prompt_tokens}+{self.output_tokens} tokens: {shapes}")
        total = len(self.shapes) * self.max_minutes_per_shape
        late = (f"; {len(self.shapes)} x {self.max_minutes_per_shape} min is more than that: the last shapes may not "
                f"start" if total > self.max_minutes else "")
        out.append(f"{who}: bounds: {self.max_minutes_per_shape} min per shape, {self.max_minutes} min in all "
                   f"(activeDeadlineSeconds {self.deadline_s}){late}; cost bound {price} "
                   f"({self.gpus * self.hours:g} GPU-h asked); " + (
                       "the pool's maximum has one node more while the profile is on: the autoscaler adds it for the "
                       "Job and removes it once idle, and the pool goes back to its planned size" if self.sized_pool
                       else f"the stack does not size an existing cluster's nodes: the Job waits, within its "
                            f"deadline, for {self.gpus} free GPUs on one of them"))
        out.append(f"{who}: results in {self.out_dir}/rows.json on the model cache and in the Job's log; list them "
                   f"under planning.measurements (docs/measurements.md \"Profiling on the cluster\")")
        if self.no_room:
            out.append(f"{who}: {self.no_room}: the profile pod runs only on GPUs no serving pod uses (PriorityClass "
                       f"{self.priority_class or 'of the profile'}: below the serving pods, preempting nothing); a "
                       f"serving pod that needs its GPUs (a rolling update with no spare node) preempts it, and the "
                       f"Job ends with the levels it finished")
        return out

    def spec(self, extra_args: tuple[str, ...] = ()) -> dict:
        """The entrypoint's input (components/profiling/sweep.py main); `extra_args`: what the cache adds to every
        `vllm serve` (the loader, the pinned revision), as the serving pods run it."""
        return {
            "deployment": self.deployment, "model": self.model, "served": self.served, "tokenizer": self.tokenizer,
            "gpu": self.accelerator, "precision": self.precision, "gpus": self.gpus,
            "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
            "max_model_len": self.max_model_len, "out_dir": self.out_dir, "max_minutes": self.max_minutes,
            "max_minutes_per_shape": self.max_minutes_per_shape,
            "shapes": [{"id": s.id, "tp": s.tp, "pp": s.pp, "kv_cache_dtype": s.kv_cache_dtype,
                        "args": [*s.args, *extra_args], "levels": list(s.levels)} for s in self.shapes],
            "skipped": [{"id": label, "reason": why} for label, why in self.skipped],
        }


def profile_candidates(req: PlanRequest) -> list[CandidateShape]:
    """The feasible shapes as the estimate ranks them, each with the knee_source planning.measurements gives it:
    "measured: ..." where the measurement is used, or "measured: refused" where it shows the shape missing the SLA
    (the plan then drops the shape: it is measured all the same)."""
    ranked = candidate_shapes(replace(req, measurements=()))
    if not req.measurements:
        return ranked
    key = lambda c: (c.instance_type, c.tp, c.pp, c.kv_cache_dtype)  # noqa: E731
    known = {key(c): c.knee_source for c in candidate_shapes(req) if c.knee_source}
    _, refusals = evaluate(req)
    for r in refusals:
        if r.detail.startswith("measured "):
            known.setdefault((r.instance_type, r.tp, r.pp, r.kv_cache_dtype), "measured: refused")
    return [replace(c, knee_source=known.get(key(c), "")) for c in ranked]


def shape_id(c: CandidateShape) -> str:
    return f"{c.accelerator}-tp{c.tp}" + (f"-pp{c.pp}" if c.pp > 1 else "") + \
        ("" if c.kv_cache_dtype == "auto" else f"-{c.kv_cache_dtype}kv")


def _with_seqs(args: tuple[str, ...], seqs: int) -> tuple[str, ...]:
    out = list(args)
    out[out.index("--max-num-seqs") + 1] = str(seqs)
    return tuple(out)


def plan_profile(deployment: str, t: Topology, candidates: list[CandidateShape], *, count: int, max_minutes: int,
                 max_minutes_per_shape: int, out_dir: str, pinned_seqs: int | None = None,
                 sized_pool: bool = True, no_room: str = "", priority_class: str = "") -> ProfilePlan:
    """The Job's shapes for one model (see the module). Raises ProfileRefused when no shape on the model's pool can
    be started on one node and none is measured."""
    if t.disaggregated:
        raise ProfileRefused("serving.disaggregation sizes it as prefill and decode instances, which an aggregated "
                             "`vllm serve` measurement does not describe (docs/measurements.md)")
    if t.wide_ep:
        raise ProfileRefused("parallelism.mode wide-ep runs one DP x EP engine over its nodes, which the profile Job's "
                             "single-node TP x PP measurement does not describe (docs/wide-ep.md)")
    seen: dict[tuple[int, int], CandidateShape] = {}
    for c in candidates:
        if c.instance_type == t.instance_type:
            seen.setdefault((c.tp, c.pp), c)
    shapes, skipped, measured, passed = [], [], [], []
    for c in seen.values():
        if len(shapes) + len(measured) == count:
            break
        if c.multi_node:  # said where it ranks before a shape the Job runs (or where no shape runs)
            passed.append((c.label(), f"TP {c.tp} x PP {c.pp} spans {c.pp} nodes; the Job starts one node's "
                                      f"engine ({c.gpus_per_node} GPUs)"))
            continue
        skipped += passed
        passed = []
        if c.knee_source:
            measured.append(c.label())
        else:
            top = max(1, c.kv_limit)  # the KV limit is already within engine.maxNumSeqs where the stack sets it
            seqs = pinned_seqs or top
            shapes.append(ProfileShape(shape_id(c), c.label(), c.tp, c.pp, c.kv_cache_dtype, seqs,
                                       tuple(sweep_levels(top)), _with_seqs(c.vllm_args, seqs)))
    if not shapes and not measured:
        why = "; ".join(f"{label}: {reason}" for label, reason in passed[:count]) or \
            f"no feasible shape on {t.instance_type}"
        raise ProfileRefused(f"no candidate shape on {t.instance_type} runs on one node ({why})")
    return ProfilePlan(
        deployment=deployment, model=t.model, served=t.served_model_name, tokenizer=t.model_repo,
        precision=t.precision, instance_type=t.instance_type, accelerator=t.accelerator,
        gpus_per_node=t.gpus_per_node, price_per_node_hour=t.price_per_node_hour, prompt_tokens=t.prompt_tokens,
        output_tokens=t.output_tokens, max_model_len=t.max_model_len, out_dir=f"{out_dir}/{deployment}",
        max_minutes=max_minutes, max_minutes_per_shape=max_minutes_per_shape, shapes=tuple(shapes),
        skipped=tuple(skipped), measured=tuple(measured), sized_pool=sized_pool, no_room=no_room,
        priority_class=priority_class)

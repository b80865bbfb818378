module

public import Pldr.Positivity

/-!
# The DAG floor for the limit, and for the potential tensor  (`[dag_floor]`)

Strengthens `Pldr.Positivity`: there `dag_floor` bounds every partial sum of the series
`tr(exp N) = Σ_j tr(N^j)/j!`. Here the bound is carried to the value of the series
itself, defined as an `ε`-limit of the partial sums (`IsLimit`, defined in this file, no
real analysis needed), and extended from `A_LM` to the potential tensor `A_P`.

* `dag_floor_trace`: for `N ≥ 0` every truncation of order `K ≥ 1` is `≥ d + tr N`.
* `dag_floor_limit`: if `L` is a limit of the partial sums (`N ≥ 0`, diagonal `≥ e`)
  then `L ≥ d + d e`; `dag_floor_limit_trace`: `L ≥ d + tr N`.
* `dag_floor_limit_metric`: for `N = A_LM ∘ A_LM`, `L - d ≥ d ε²`.
* `dag_floor_potential`, `dag_floor_limit_potential`: for `N = A_P ∘ A_P`,
  the truncated penalty and the limit penalty are `≥ Σ_i (A_P)_{ii}² > 0` (`d ≥ 1`).

Abstracted: the real power in `A_P` (a `PowMap`, positive on positive bases); `exp` in
the sigmoid (an `ExpMap`). That the series converges (so that `L` exists) is not
formalised; every limit, if one exists, obeys the floor. There are no unproved
assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- `L` is a limit of the sequence `s`: for every `ε > 0`, eventually `|s n - L| < ε`. -/
@[expose] def IsLimit (s : Nat → α) (L : α) : Prop :=
  ∀ ε, 0 < ε → ∃ N, ∀ n, N ≤ n → L - ε < s n ∧ s n < L + ε

/-- A limit of a sequence that is eventually (from index `1`) at least `f` is at least `f`. -/
theorem le_of_isLimit {s : Nat → α} {L f : α} (hL : IsLimit s L)
    (hs : ∀ n, 1 ≤ n → f ≤ s n) : f ≤ L := by
  rcases (Std.le_total : f ≤ L ∨ L ≤ f) with h | h
  · exact h
  · by_cases he : f = L
    · rw [he]; exact Std.le_refl _
    · have hpos : 0 < f - L := by grind
      obtain ⟨N, hN⟩ := hL (f - L) hpos
      have h1 := (hN (N + 1) (by omega)).2
      have h2 := hs (N + 1) (by omega)
      grind

/-- [dag_floor] For `N ≥ 0`, every truncation of order `K ≥ 1` of `tr(exp N)` is at least
`d + tr N`. -/
theorem dag_floor_trace {d : Nat} (N : Mat α d d) (hN : ∀ i j, 0 ≤ N i j) (K : Nat)
    (hK : 1 ≤ K) : (d : α) + trace N ≤ expTraceTrunc N K := by
  obtain ⟨K', rfl⟩ : ∃ K', K = K' + 1 := ⟨K - 1, by omega⟩
  refine Std.le_trans ?_ (expTraceTrunc_mono hN K')
  have hf0 : ((fact 0 : Nat) : α) = 1 := by simp only [fact]; grind
  have hf1 : ((fact 1 : Nat) : α) = 1 := by simp only [fact]; grind
  simp only [expTraceTrunc, matPow, Mat.one_mul, trace_one, hf0, hf1]
  have hi : (1 : α)⁻¹ = 1 := by
    have := Field.mul_inv_cancel (a := (1 : α)) (by grind); grind
  rw [hi]; grind

/-- [dag_floor] The value of the series: if `L` is a limit of the partial sums of
`tr(exp N)` (`N ≥ 0`, diagonal `≥ e`), then `L ≥ d + d e`. -/
theorem dag_floor_limit {d : Nat} (N : Mat α d d) (e : α) (hN : ∀ i j, 0 ≤ N i j)
    (hdiag : ∀ i, e ≤ N i i) (L : α) (hL : IsLimit (expTraceTrunc N) L) :
    (d : α) + (d : α) * e ≤ L :=
  le_of_isLimit hL fun K hK => dag_floor N e hN hdiag K hK

/-- [dag_floor] The value of the series is at least `d + tr N` (`N ≥ 0`). -/
theorem dag_floor_limit_trace {d : Nat} (N : Mat α d d) (hN : ∀ i j, 0 ≤ N i j) (L : α)
    (hL : IsLimit (expTraceTrunc N) L) : (d : α) + trace N ≤ L :=
  le_of_isLimit hL fun K hK => dag_floor_trace N hN K hK

/-- [dag_floor] Applied to the metric tensor: every limit `L` of the series of
`tr(exp(A_LM ∘ A_LM))` has NOTEARS penalty `L - d ≥ d ε²`. -/
theorem dag_floor_limit_metric {dk : Nat} (E : ExpMap α) (p : PlgaParams α dk)
    (heps : 0 < p.eps) (A : Mat α dk dk) (L : α)
    (hL : IsLimit (expTraceTrunc (hadamard (metricLM E p A) (metricLM E p A))) L) :
    (dk : α) * (p.eps * p.eps) ≤ L - (dk : α) := by
  have h := le_of_isLimit (f := (dk : α) + (dk : α) * (p.eps * p.eps)) hL fun K hK => by
    have := dag_floor_metric E p heps A K hK; grind
  grind

/-- A sum of positive terms over a nonempty index set is positive. -/
theorem finSum_pos {d : Nat} (hd : 1 ≤ d) {f : Fin d → α} (h : ∀ i, 0 < f i) :
    0 < finSum f := by
  obtain ⟨d', rfl⟩ : ∃ d', d = d' + 1 := ⟨d - 1, by omega⟩
  rw [finSum_succ]
  have h1 := finSum_nonneg (f := fun i : Fin d' => f i.castSucc) fun i => Std.le_of_lt (h _)
  have h2 := h (Fin.last d')
  grind

/-- [dag_floor] Applied to the potential tensor: for `N = A_P ∘ A_P` every truncation of
order `K ≥ 1` of the NOTEARS penalty is at least `Σ_i (A_P)_{ii}²`, which is `> 0` for
`d ≥ 1` (each `(A_P)_{ii} > 0`). -/
theorem dag_floor_potential {dk : Nat} (hd : 1 ≤ dk) (E : ExpMap α) (pw : PowMap α)
    (p : PlgaParams α dk) (heps : 0 < p.eps) (A : Mat α dk dk) (K : Nat) (hK : 1 ≤ K) :
    0 < trace (hadamard (metricAP E pw p A) (metricAP E pw p A)) ∧
      trace (hadamard (metricAP E pw p A) (metricAP E pw p A)) ≤
        expTraceTrunc (hadamard (metricAP E pw p A) (metricAP E pw p A)) K - (dk : α) := by
  have hpos := (metric_positivity E pw p heps A).2.2
  refine ⟨finSum_pos hd fun i => OrderedRing.mul_pos (hpos i i) (hpos i i), ?_⟩
  have h := dag_floor_trace (hadamard (metricAP E pw p A) (metricAP E pw p A))
    (fun i j => mul_self_nonneg' _) K hK
  grind

/-- [dag_floor] The potential tensor, value of the series: every limit `L` of the series
of `tr(exp(A_P ∘ A_P))` has NOTEARS penalty `L - d ≥ Σ_i (A_P)_{ii}² > 0`. -/
theorem dag_floor_limit_potential {dk : Nat} (hd : 1 ≤ dk) (E : ExpMap α) (pw : PowMap α)
    (p : PlgaParams α dk) (heps : 0 < p.eps) (A : Mat α dk dk) (L : α)
    (hL : IsLimit (expTraceTrunc (hadamard (metricAP E pw p A) (metricAP E pw p A))) L) :
    0 < trace (hadamard (metricAP E pw p A) (metricAP E pw p A)) ∧
      trace (hadamard (metricAP E pw p A) (metricAP E pw p A)) ≤ L - (dk : α) := by
  refine ⟨(dag_floor_potential hd E pw p heps A 1 (Nat.le_refl 1)).1, ?_⟩
  have h := dag_floor_limit_trace (hadamard (metricAP E pw p A) (metricAP E pw p A))
    (fun i j => mul_self_nonneg' _) L hL
  grind

end Pldr

end

module

public import Pldr.Attention

/-!
# Positivity of the metric tensors and the DAG floor  (`[metric_positivity]`, `[dag_floor]`)

Paper: the metric tensor `A_LM = iSwiGLU(W A + b) + ε` is entrywise positive, hence so is
the potential tensor `A_P = A_LM ^ P`; and a strictly positive weighted adjacency matrix
can never be acyclic: the NOTEARS penalty `tr(exp(A_LM ∘ A_LM)) - d` is bounded below by
`d ε² > 0`.

* `[metric_positivity]`: `σ > 0`, `iSwiGLU ≥ 0`, `A_LM ≥ ε > 0` and `A_P > 0` entrywise,
  for any parameters and any input, with `ε > 0`.
* `[dag_floor]`: for `N ≥ 0` entrywise with diagonal `≥ e`, every truncation of order
  `K ≥ 1` of the series `tr(exp N) = Σ_j tr(N^j)/j!` is `≥ d + d e`; since the terms are
  nonnegative the truncations increase, so the series itself (its limit, not formalised:
  core Lean has no real analysis) is `≥ d + d e` too. Applied to `N = A_LM ∘ A_LM`
  (Hadamard square) the truncated NOTEARS penalty is `≥ d ε² > 0`.

Abstracted: `exp` in the sigmoid (an `ExpMap`), the real power (a `PowMap`, positive on
positive bases), the LayerNorm and learner (arbitrary). The matrix exponential is
represented by its partial sums. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- In an ordered field, the inverse of a positive element is positive. -/
theorem inv_pos_of_pos {a : α} (h : 0 < a) : 0 < a⁻¹ := by
  have h1 : a * a⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have h2 : (0 : α) < a * a⁻¹ := by rw [h1]; exact OrderedRing.zero_lt_one
  rcases OrderedRing.mul_pos_iff.mp h2 with ⟨_, h3⟩ | ⟨h3, _⟩
  · exact h3
  · grind

/-- In an ordered field, the inverse of a nonnegative element is nonnegative. -/
theorem inv_nonneg_of_nonneg {a : α} (h : 0 ≤ a) : 0 ≤ a⁻¹ := by
  by_cases ha : a = 0
  · rw [ha, Field.inv_zero]; grind
  · have := inv_pos_of_pos (a := a) (by grind); grind

/-- Squares are nonnegative. -/
theorem mul_self_nonneg' (a : α) : 0 ≤ a * a := by
  have h := OrderedRing.sq_nonneg (a := a)
  have e : a ^ 2 = a * a := by grind
  rw [e] at h; exact h

/-- Squares are monotone on nonnegatives: `0 ≤ e ≤ a → e² ≤ a²`. -/
theorem mul_self_le_mul_self' {e a : α} (he : 0 ≤ e) (h : e ≤ a) : e * e ≤ a * a := by
  have h1 : e * e ≤ e * a := OrderedRing.mul_le_mul_of_nonneg_left h he
  have h2 : e * a ≤ a * a := OrderedRing.mul_le_mul_of_nonneg_right h (by grind)
  grind

/-! ### Metric positivity -/

/-- The sigmoid is positive. -/
theorem sigmoid_pos (E : ExpMap α) (x : α) : 0 < sigmoid E x := by
  have h := E.exp_pos (-x)
  have h1 : (0 : α) < 1 + E.exp (-x) := by have := OrderedRing.zero_lt_one (R := α); grind
  have := inv_pos_of_pos h1
  simp only [sigmoid, Field.div_eq_mul_inv]; grind

/-- [metric_positivity] `iSwiGLU(x) = x² σ(x) ≥ 0`. -/
theorem metric_positivity_iSwiGLU (E : ExpMap α) (x : α) : 0 ≤ iSwiGLU E x := by
  have h1 := mul_self_nonneg' x
  have h2 := sigmoid_pos E x
  have h3 : 0 ≤ x * x * sigmoid E x := OrderedRing.mul_nonneg h1 (by grind)
  simp only [iSwiGLU]; grind

/-- [metric_positivity] Every entry of `A_LM` is at least `ε`. -/
theorem metric_positivity_ge_eps {dk : Nat} (E : ExpMap α) (p : PlgaParams α dk)
    (A : Mat α dk dk) (i j : Fin dk) : p.eps ≤ metricLM E p A i j := by
  have := metric_positivity_iSwiGLU E ((p.W ⬝ A + p.b) i j)
  simp only [metricLM]; grind

/-- [metric_positivity] With `ε > 0`: `A_LM > 0` and `A_P = A_LM ^ P > 0` entrywise (any
real exponents), and `iSwiGLU ≥ 0` everywhere. -/
theorem metric_positivity {dk : Nat} (E : ExpMap α) (pw : PowMap α) (p : PlgaParams α dk)
    (heps : 0 < p.eps) (A : Mat α dk dk) :
    (∀ x, 0 ≤ iSwiGLU E x) ∧ (∀ i j, 0 < metricLM E p A i j) ∧
      (∀ i j, 0 < metricAP E pw p A i j) := by
  have hLM : ∀ i j, 0 < metricLM E p A i j := fun i j => by
    have := metric_positivity_ge_eps E p A i j; grind
  exact ⟨metric_positivity_iSwiGLU E, hLM, fun i j => pw.rpow_pos _ _ (hLM i j)⟩

/-! ### The DAG floor -/

/-- The trace of a square matrix. -/
@[expose] def trace {d : Nat} (N : Mat α d d) : α := finSum fun i => N i i

/-- Matrix powers `N^j`. -/
@[expose] def matPow {d : Nat} (N : Mat α d d) : Nat → Mat α d d
  | 0 => 1
  | j + 1 => matPow N j ⬝ N

/-- The factorial. -/
@[expose] def fact : Nat → Nat
  | 0 => 1
  | n + 1 => (n + 1) * fact n

/-- The truncation of order `K` of the series `tr(exp N) = Σ_j tr(N^j) / j!`. -/
@[expose] def expTraceTrunc {d : Nat} (N : Mat α d d) : Nat → α
  | 0 => trace (matPow N 0) * ((fact 0 : Nat) : α)⁻¹
  | K + 1 => expTraceTrunc N K + trace (matPow N (K + 1)) * ((fact (K + 1) : Nat) : α)⁻¹

/-- The Hadamard (entrywise) product. -/
@[expose] def hadamard {d : Nat} (A B : Mat α d d) : Mat α d d := fun i j => A i j * B i j

/-- A product of entrywise nonnegative matrices is entrywise nonnegative. -/
theorem mul_nonneg_entries {d : Nat} {A B : Mat α d d} (hA : ∀ i j, 0 ≤ A i j)
    (hB : ∀ i j, 0 ≤ B i j) : ∀ i j, 0 ≤ (A ⬝ B) i j := fun i j =>
  finSum_nonneg fun l => OrderedRing.mul_nonneg (hA i l) (hB l j)

/-- Powers of an entrywise nonnegative matrix are entrywise nonnegative. -/
theorem matPow_nonneg {d : Nat} {N : Mat α d d} (hN : ∀ i j, 0 ≤ N i j) :
    ∀ j, ∀ a b, 0 ≤ matPow N j a b
  | 0 => fun a b => by
    simp only [matPow, Mat.one_apply]; split
    · exact Std.le_of_lt OrderedRing.zero_lt_one
    · grind
  | j + 1 => mul_nonneg_entries (matPow_nonneg hN j) hN

/-- The trace of the identity is the dimension. -/
theorem trace_one {d : Nat} : trace (1 : Mat α d d) = (d : α) := by
  simp only [trace, Mat.one_apply, if_true]
  rw [finSum_const]; grind

/-- The truncations increase with the order when `N ≥ 0`. -/
theorem expTraceTrunc_mono {d : Nat} {N : Mat α d d} (hN : ∀ i j, 0 ≤ N i j) (K : Nat) :
    expTraceTrunc N 1 ≤ expTraceTrunc N (K + 1) := by
  induction K with
  | zero => exact Std.le_refl _
  | succ K ih =>
    have h1 : 0 ≤ trace (matPow N (K + 2)) := finSum_nonneg fun i => matPow_nonneg hN _ i i
    have h2 := inv_nonneg_of_nonneg (OrderedRing.natCast_nonneg (R := α) (a := fact (K + 2)))
    have h3 := OrderedRing.mul_nonneg h1 h2
    show _ ≤ expTraceTrunc N (K + 1) + _
    grind

/-- [dag_floor] For `N ≥ 0` entrywise with diagonal `≥ e`, every truncation of order
`K ≥ 1` of the series of `tr(exp N)` is at least `d + d e`. -/
theorem dag_floor {d : Nat} (N : Mat α d d) (e : α) (hN : ∀ i j, 0 ≤ N i j)
    (hdiag : ∀ i, e ≤ N i i) (K : Nat) (hK : 1 ≤ K) :
    (d : α) + (d : α) * e ≤ expTraceTrunc N K := by
  obtain ⟨K', rfl⟩ : ∃ K', K = K' + 1 := ⟨K - 1, by omega⟩
  refine Std.le_trans ?_ (expTraceTrunc_mono hN K')
  have htr : (d : α) * e ≤ trace N := by
    rw [← finSum_const]; exact finSum_le_finSum hdiag
  have hf0 : ((fact 0 : Nat) : α) = 1 := by simp only [fact]; grind
  have hf1 : ((fact 1 : Nat) : α) = 1 := by simp only [fact]; grind
  simp only [expTraceTrunc, matPow, Mat.one_mul, trace_one, hf0, hf1]
  have hi : (1 : α)⁻¹ = 1 := by
    have := Field.mul_inv_cancel (a := (1 : α)) (by grind); grind
  rw [hi]; grind

/-- [dag_floor] Applied to the metric tensor: with `ε > 0`, the truncated NOTEARS penalty
`tr(exp(A_LM ∘ A_LM)) - d` (any order `K ≥ 1`) is at least `d ε²`, which is `> 0` as soon
as `d ≥ 1`: exact acyclicity is impossible for a strictly positive tensor. -/
theorem dag_floor_metric {dk : Nat} (E : ExpMap α) (p : PlgaParams α dk) (heps : 0 < p.eps)
    (A : Mat α dk dk) (K : Nat) (hK : 1 ≤ K) :
    (dk : α) * (p.eps * p.eps) ≤
      expTraceTrunc (hadamard (metricLM E p A) (metricLM E p A)) K - (dk : α) := by
  have h := dag_floor (hadamard (metricLM E p A) (metricLM E p A)) (p.eps * p.eps)
    (fun i j => mul_self_nonneg' _)
    (fun i => mul_self_le_mul_self' (by grind) (metric_positivity_ge_eps E p A i i)) K hK
  grind

/-- [dag_floor] The floor `d ε²` is strictly positive for `d ≥ 1` and `ε > 0`. -/
theorem dag_floor_pos {d : Nat} (hd : 1 ≤ d) (eps : α) (heps : 0 < eps) :
    0 < (d : α) * (eps * eps) := by
  obtain ⟨d', rfl⟩ : ∃ d', d = d' + 1 := ⟨d - 1, by omega⟩
  have h0 := OrderedRing.natCast_nonneg (R := α) (a := d')
  have hc : ((d' + 1 : Nat) : α) = (d' : α) + 1 := by grind
  have h1 : (0 : α) < ((d' + 1 : Nat) : α) := by
    rw [hc]; have := OrderedRing.zero_lt_one (R := α); grind
  exact OrderedRing.mul_pos h1 (OrderedRing.mul_pos heps heps)

end Pldr

end

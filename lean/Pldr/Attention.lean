module

public import Pldr.Algebra.Matrix

/-!
# Attention: abstract exponential, softmax, SDPA and the PLGA head

This file fixes the objects the theorems talk about. It proves nothing deep; it is the
dictionary between the paper (and the reference implementation) and the formal text.

* `ExpMap α`: an *abstract exponential* on an ordered field `α`: a function `exp` with
  `exp (a + b) = exp a * exp b` and `exp a > 0`. The real exponential is an instance;
  core Lean has no real numbers, so every theorem is stated for an arbitrary such map.
  (Over `Rat` the only such map is the constant `1`, `ExpMap.eq_one_of_rat` in
  `Pldr.ExpRat`; the theorems are meant for `ℝ`.)
* `msoftmax E mask x`: softmax of the score row `x` with the entries where `mask` is
  `false` removed (weight exactly `0`). The reference adds `-1e9` at masked places
  instead; exact masking is the limit of that and is what we formalise.
* `RowNorm α n`: an arbitrary row normaliser (given the row index, so causal masking is
  allowed). `causalSoftmax E` is the one PLGA and SDPA use.
* `scores τ Q G K = τ • (Q G Kᵀ)`, `attend nrm τ Q G K V = nrm(scores) V`: attention with
  an arbitrary metric `G`. The scale `τ` is arbitrary (the paper uses `1/√dk`).
* `sdpa`: scaled dot-product attention, i.e. the same with no `G` at all.
* `gram Q = Qᵀ Q`: the density operator, global over all rows supplied in the call.
* `plgaHeadWith Φ`: the PLGA head with an arbitrary *metric map* `Φ` from the Gram
  matrix to `G`.
* `PlgaParams`, `metricLM`, `metricAP`, `energyCurvature`, `metricOfGram`, `plgaHead`:
  the paper's pipeline `D ↦ A0 = LN(D) ↦ A = Φ(A0) ↦ A_LM = iSwiGLU(W A + b) + ε ↦
  A_P = A_LM ^ P ↦ G = a A_P + b_a`, with the row LayerNorm and the residual SwiGLU
  learner kept as arbitrary functions (their internals play no role in any theorem),
  the sigmoid built from the abstract exponential, and the real power `x ^ y` replaced by
  an abstract `PowMap` that is positive on positive bases.

Not formalised: floating point, the numerical value of `exp`, `sqrt`, LayerNorm and
SwiGLU internals, batching and multiple heads inside one call (heads are independent and
the statements are per head).
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

/-- An abstract exponential on an ordered field: a homomorphism from `(α, +)` to the
positive elements of `(α, *)`. The real exponential is the intended instance. -/
structure ExpMap (α : Type u) [Field α] [LT α] where
  /-- The exponential function. -/
  exp : α → α
  /-- `exp (a + b) = exp a * exp b`. -/
  exp_add : ∀ a b, exp (a + b) = exp a * exp b
  /-- `exp a > 0`. -/
  exp_pos : ∀ a, 0 < exp a

/-- An abstract real power `x ^ y`: all we use is that a positive base gives a positive
result (true of `Real.rpow` for every real exponent). -/
structure PowMap (α : Type u) [Field α] [LT α] where
  /-- The power function `rpow x y = x ^ y`. -/
  rpow : α → α → α
  /-- `x > 0 → x ^ y > 0`. -/
  rpow_pos : ∀ x y, 0 < x → 0 < rpow x y

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- The exponential never vanishes. -/
theorem ExpMap.exp_ne_zero (E : ExpMap α) (a : α) : E.exp a ≠ 0 := by
  have := E.exp_pos a; grind

/-- A two-position softmax weight with a common positive second term determines the first
term: `x / (x + c) = y / (y + c)` with `x, y, c > 0` forces `x = y` (the step of every
prefix counterexample: equal rows force equal exponentials). -/
theorem eq_of_div_add_eq_div_add {x y c : α} (hx : 0 < x) (hy : 0 < y) (hc : 0 < c)
    (h : x / (x + c) = y / (y + c)) : x = y := by
  have d1 : x + c ≠ 0 := by grind
  have d2 : y + c ≠ 0 := by grind
  have hc' : c ≠ 0 := by grind
  have : x * (y + c) = y * (x + c) := by grind
  have : (x - y) * c = 0 := by grind
  grind

/-! ### Softmax and row normalisers -/

/-- Softmax of the row `x` restricted to the entries where `mask` is `true`:
`exp (x j) / ∑_{mask l} exp (x l)` on allowed entries and `0` on masked ones. -/
@[expose] def msoftmax {n : Nat} (E : ExpMap α) (mask : Fin n → Bool) (x : Fin n → α) :
    Fin n → α :=
  fun j => if mask j = true then
      E.exp (x j) / finSum (fun l => if mask l = true then E.exp (x l) else 0)
    else 0

/-- Plain (unmasked) softmax. -/
@[expose] def softmax {n : Nat} (E : ExpMap α) (x : Fin n → α) : Fin n → α :=
  msoftmax E (fun _ => true) x

/-- The causal mask of row `i`: position `j` is visible iff `j ≤ i`. -/
@[expose] def causalMask {n : Nat} (i : Fin n) : Fin n → Bool := fun j => decide (j ≤ i)

/-- A row normaliser for `n × n` score matrices: given the row index and the row of
scores, return the row of attention weights. -/
@[expose] def RowNorm (α : Type u) (n : Nat) : Type u := Fin n → (Fin n → α) → (Fin n → α)

/-- Causal softmax, the row normaliser of causal SDPA and PLGA. -/
@[expose] def causalSoftmax {n : Nat} (E : ExpMap α) : RowNorm α n :=
  fun i x => msoftmax E (causalMask i) x

/-! ### Attention with a metric, SDPA, PLGA -/

/-- Attention scores with metric `G`: `τ • (Q G Kᵀ)`. -/
@[expose] def scores {S dk : Nat} (τ : α) (Q : Mat α S dk) (G : Mat α dk dk)
    (K : Mat α S dk) : Mat α S S :=
  τ • (Q ⬝ G ⬝ Kᵀ)

/-- Apply a row normaliser to every row of a score matrix. -/
@[expose] def weights {S : Nat} (nrm : RowNorm α S) (E : Mat α S S) : Mat α S S :=
  fun i => nrm i (E i)

/-- Attention with metric `G`: `nrm(τ Q G Kᵀ) V`. -/
@[expose] def attend {S dk dv : Nat} (nrm : RowNorm α S) (τ : α) (Q : Mat α S dk)
    (G : Mat α dk dk) (K : Mat α S dk) (V : Mat α S dv) : Mat α S dv :=
  weights nrm (scores τ Q G K) ⬝ V

/-- SDPA scores `τ • (Q Kᵀ)`. -/
@[expose] def sdpaScores {S dk : Nat} (τ : α) (Q K : Mat α S dk) : Mat α S S :=
  τ • (Q ⬝ Kᵀ)

/-- Scaled dot-product attention `nrm(τ Q Kᵀ) V`. -/
@[expose] def sdpa {S dk dv : Nat} (nrm : RowNorm α S) (τ : α) (Q K : Mat α S dk)
    (V : Mat α S dv) : Mat α S dv :=
  weights nrm (sdpaScores τ Q K) ⬝ V

/-- The density operator `D = Qᵀ Q` (uncentred second moment of the query rows; global
over all rows of the call). -/
@[expose] def gram {S dk : Nat} (Q : Mat α S dk) : Mat α dk dk := Qᵀ ⬝ Q

/-- The PLGA head with an arbitrary metric map `Φ`: `G = Φ(Qᵀ Q)`, then attention with `G`. -/
@[expose] def plgaHeadWith {S dk dv : Nat} (nrm : RowNorm α S) (τ : α)
    (Φ : Mat α dk dk → Mat α dk dk) (Q K : Mat α S dk) (V : Mat α S dv) : Mat α S dv :=
  attend nrm τ Q (Φ (gram Q)) K V

/-! ### The metric pipeline of the paper -/

/-- The logistic sigmoid `σ(x) = 1 / (1 + exp (-x))`, built on the abstract exponential. -/
@[expose] def sigmoid (E : ExpMap α) (x : α) : α := 1 / (1 + E.exp (-x))

/-- `iSwiGLU(x) = x * silu(x) = x² σ(x)`. -/
@[expose] def iSwiGLU (E : ExpMap α) (x : α) : α := x * (x * sigmoid E x)

/-- The learned parameters of one PLGA head's metric pipeline. The row LayerNorm of the
density operator and the residual SwiGLU learner are kept as arbitrary functions. -/
structure PlgaParams (α : Type u) (dk : Nat) where
  /-- `D ↦ A0`: LayerNorm of each row of `D` (with learned gain and bias). -/
  norm0 : Mat α dk dk → Mat α dk dk
  /-- `A0 ↦ A`: the stack of residual SwiGLU units with row LayerNorms. -/
  learner : Mat α dk dk → Mat α dk dk
  /-- Linear map of the metric tensor. -/
  W : Mat α dk dk
  /-- Bias of the metric tensor. -/
  b : Mat α dk dk
  /-- Entrywise exponents of the potential tensor. -/
  P : Mat α dk dk
  /-- Left factor of the energy-curvature operator. -/
  a : Mat α dk dk
  /-- Bias of the energy-curvature operator. -/
  ba : Mat α dk dk
  /-- The small constant added to the metric tensor (`1e-9` in the reference). -/
  eps : α

/-- The metric tensor `A_LM = iSwiGLU(W A + b) + ε` (entrywise). -/
@[expose] def metricLM {dk : Nat} (E : ExpMap α) (p : PlgaParams α dk) (A : Mat α dk dk) :
    Mat α dk dk :=
  fun i j => iSwiGLU E ((p.W ⬝ A + p.b) i j) + p.eps

/-- The potential tensor `A_P = A_LM ^ P` (entrywise real power). -/
@[expose] def metricAP {dk : Nat} (E : ExpMap α) (pw : PowMap α) (p : PlgaParams α dk)
    (A : Mat α dk dk) : Mat α dk dk :=
  fun i j => pw.rpow (metricLM E p A i j) (p.P i j)

/-- The energy-curvature operator `G = a A_P + b_a`. -/
@[expose] def energyCurvature {dk : Nat} (E : ExpMap α) (pw : PowMap α) (p : PlgaParams α dk)
    (A : Mat α dk dk) : Mat α dk dk :=
  p.a ⬝ metricAP E pw p A + p.ba

/-- The full metric map of the paper: `D ↦ G = a (iSwiGLU(W Φ(LN D) + b) + ε)^P + b_a`. -/
@[expose] def metricOfGram {dk : Nat} (E : ExpMap α) (pw : PowMap α) (p : PlgaParams α dk)
    (D : Mat α dk dk) : Mat α dk dk :=
  energyCurvature E pw p (p.learner (p.norm0 D))

/-- One causal PLGA head as in the paper: `softmax(τ Q G Kᵀ + mask) V` with
`G = metricOfGram (Qᵀ Q)`. -/
@[expose] def plgaHead {S dk dv : Nat} (E : ExpMap α) (pw : PowMap α) (p : PlgaParams α dk)
    (τ : α) (Q K : Mat α S dk) (V : Mat α S dv) : Mat α S dv :=
  plgaHeadWith (causalSoftmax E) τ (metricOfGram E pw p) Q K V

end Pldr

end

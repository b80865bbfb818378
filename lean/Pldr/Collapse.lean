module

public import Pldr.Softmax

/-!
# Caching and collapse  (`[cache_equivalence]`, `[collapse_absorption]`)

Paper: at inference the energy-curvature operator `G` is empirically constant ("collapse"),
so it can be cached (G-cache) and the layer becomes generalised SDPA, with `G*` folded
into the query projection.

* `[cache_equivalence]`: if a layer's metric is invariant on a set of inputs
  (`G(X) = G*`), the cached layer equals the recomputing layer there — scores, rows and
  outputs (`cache_equivalence_layer`). For a stack of layers (the whole model: embedding,
  decoder layers with any number of heads and any post-processing, readout) the cached
  model equals the uncached one on every input whose forward pass meets only invariant
  metrics (`cache_equivalence`). Only this direction holds: caching can be exact while
  the upstream tensors are not invariant — with `a = 0` and `b_a = G*` the operator
  `G = a A_P + b_a` is constantly `G*` while `A_P` varies
  (`cache_equivalence_not_converse`, with an exact rational instance).
* `[collapse_absorption]`: a constant `G*` turns the head into SDPA on `Q G*`
  (post-rotation form, always exact); without RoPE `G*` folds into the affine query
  projection, weight and bias together; with RoPE, folding before rotation is exact when
  `G*` commutes with every rotation (`collapse_absorption`).

Abstracted: a decoder layer is an arbitrary map built from per-head projections
`q, k, v`, a per-head metric map and an arbitrary post-processing (`post`: output
projection, residual, LayerNorm, SwiGLU FFN); the rotation family `R` is any family of
orthogonal matrices (RoPE is one: see `Pldr.rope_group`). There are no unproved
assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u v

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-! ### Layers, stacks, caches -/

/-- A decoder layer with `H` attention heads on a residual stream of width `dm`: per-head
query/key/value maps (projections, with RoPE if any), per-head metric maps `X ↦ G_h(X)`
(the whole PLGA metric pipeline, through the Gram of the head's queries), and an arbitrary
post-processing of the input and the head outputs. -/
structure Layer (α : Type u) (S dm dk dv H : Nat) where
  /-- Queries of head `h`. -/
  q : Fin H → Mat α S dm → Mat α S dk
  /-- Keys of head `h`. -/
  k : Fin H → Mat α S dm → Mat α S dk
  /-- Values of head `h`. -/
  v : Fin H → Mat α S dm → Mat α S dv
  /-- The metric `G` of head `h` as computed from the layer input. -/
  metric : Fin H → Mat α S dm → Mat α dk dk
  /-- Concatenation, output projection, residual, LayerNorm, FFN. -/
  post : Mat α S dm → (Fin H → Mat α S dv) → Mat α S dm

/-- A layer together with the metrics stored in its G-cache. -/
structure CachedLayer (α : Type u) (S dm dk dv H : Nat) where
  /-- The layer. -/
  layer : Layer α S dm dk dv H
  /-- The cached metric `G*_h` of every head. -/
  gstar : Fin H → Mat α dk dk

variable {S dm dk dv H : Nat}

/-- The recomputing layer: every head computes its metric from the input. -/
@[expose] def Layer.forward (L : Layer α S dm dk dv H) (nrm : RowNorm α S) (τ : α)
    (X : Mat α S dm) : Mat α S dm :=
  L.post X (fun h => attend nrm τ (L.q h X) (L.metric h X) (L.k h X) (L.v h X))

/-- The cached layer: every head uses its stored metric. -/
@[expose] def Layer.forwardCached (L : Layer α S dm dk dv H) (nrm : RowNorm α S) (τ : α)
    (gs : Fin H → Mat α dk dk) (X : Mat α S dm) : Mat α S dm :=
  L.post X (fun h => attend nrm τ (L.q h X) (gs h) (L.k h X) (L.v h X))

/-- The uncached stack. -/
@[expose] def runStack (nrm : RowNorm α S) (τ : α) :
    List (CachedLayer α S dm dk dv H) → Mat α S dm → Mat α S dm
  | [], X => X
  | ℓ :: rest, X => runStack nrm τ rest (ℓ.layer.forward nrm τ X)

/-- The G-cached stack. -/
@[expose] def runStackCached (nrm : RowNorm α S) (τ : α) :
    List (CachedLayer α S dm dk dv H) → Mat α S dm → Mat α S dm
  | [], X => X
  | ℓ :: rest, X => runStackCached nrm τ rest (ℓ.layer.forwardCached nrm τ ℓ.gstar X)

/-- Invariance along the forward pass: at every layer, the metric computed from the input
that actually reaches that layer equals the cached one. -/
@[expose] def InvariantOn (nrm : RowNorm α S) (τ : α) :
    List (CachedLayer α S dm dk dv H) → Mat α S dm → Prop
  | [], _ => True
  | ℓ :: rest, X => (∀ h, ℓ.layer.metric h X = ℓ.gstar h) ∧
      InvariantOn nrm τ rest (ℓ.layer.forward nrm τ X)

/-- [cache_equivalence] One layer: if every head's metric on `X` equals its cached
value, the cached layer agrees with the recomputing one — scores, attention rows, head
outputs and layer output. -/
theorem cache_equivalence_layer (L : Layer α S dm dk dv H) (nrm : RowNorm α S) (τ : α)
    (gs : Fin H → Mat α dk dk) (X : Mat α S dm) (hinv : ∀ h, L.metric h X = gs h) :
    (∀ h, scores τ (L.q h X) (gs h) (L.k h X) = scores τ (L.q h X) (L.metric h X) (L.k h X)) ∧
    (∀ h, weights nrm (scores τ (L.q h X) (gs h) (L.k h X)) =
      weights nrm (scores τ (L.q h X) (L.metric h X) (L.k h X))) ∧
    (∀ h, attend nrm τ (L.q h X) (gs h) (L.k h X) (L.v h X) =
      attend nrm τ (L.q h X) (L.metric h X) (L.k h X) (L.v h X)) ∧
    L.forwardCached nrm τ gs X = L.forward nrm τ X := by
  refine ⟨fun h => by rw [hinv], fun h => by rw [hinv], fun h => by rw [hinv], ?_⟩
  simp only [Layer.forwardCached, Layer.forward, hinv]

/-- The cached stack agrees with the uncached stack on an input whose forward pass meets
only invariant metrics. -/
theorem runStackCached_eq (nrm : RowNorm α S) (τ : α) :
    ∀ (layers : List (CachedLayer α S dm dk dv H)) (X : Mat α S dm),
      InvariantOn nrm τ layers X → runStackCached nrm τ layers X = runStack nrm τ layers X
  | [], _, _ => rfl
  | ℓ :: rest, X, ⟨h1, h2⟩ => by
    simp only [runStackCached, runStack]
    rw [(cache_equivalence_layer ℓ.layer nrm τ ℓ.gstar X h1).2.2.2]
    exact runStackCached_eq nrm τ rest _ h2

/-- [cache_equivalence] The whole model: for any embedding of inputs into the residual
stream, any stack of PLGA layers with G-caches and any readout (final LayerNorm and
logits), if every input of the set `D` meets only invariant metrics along its forward
pass, the cached model equals the uncached model on `D`. -/
theorem cache_equivalence {ι : Type v} {β : Type v} (nrm : RowNorm α S) (τ : α)
    (embed : ι → Mat α S dm) (readout : Mat α S dm → β)
    (layers : List (CachedLayer α S dm dk dv H)) (D : ι → Prop)
    (hD : ∀ x, D x → InvariantOn nrm τ layers (embed x)) :
    ∀ x, D x → readout (runStackCached nrm τ layers (embed x)) =
      readout (runStack nrm τ layers (embed x)) :=
  fun x hx => by rw [runStackCached_eq nrm τ layers (embed x) (hD x hx)]

/-! ### The converse fails -/

/-- The identity "power" `x ^ y = x`: positive on positive bases, so a `PowMap`. It
serves only to make the counterexample below concrete. -/
@[expose] def PowMap.base : PowMap α where
  rpow := fun x _ => x
  rpow_pos := fun _ _ h => h

/-- [cache_equivalence] With `a = 0` the energy-curvature operator `G = a A_P + b_a` is
the constant `b_a` whatever the upstream tensors are: caching `G* = b_a` is exact for
every input, with no invariance of `A`, `A_LM` or `A_P`. -/
theorem cache_equivalence_zero_a {dk : Nat} (E : ExpMap α) (pw : PowMap α)
    (p : PlgaParams α dk) (ha : p.a = 0) (A : Mat α dk dk) :
    energyCurvature E pw p A = p.ba := by
  simp only [energyCurvature, ha, Mat.zero_mul, Mat.zero_add]

/-- Parameters of the one-dimensional counterexample: `W = 1`, `b = 0`, `P = 1`, `ε = 1`,
`a = 0`, `b_a = 7`, identity LayerNorm and learner. -/
@[expose] def cexParams : PlgaParams Rat 1 where
  norm0 := fun D => D
  learner := fun A => A
  W := 1
  b := 0
  P := 1
  a := 0
  ba := fun _ _ => 7
  eps := 1

/-- [cache_equivalence] Only one direction holds (exact rationals): for the parameters
`cexParams` (`a = 0`, `b_a = G* = 7`), the operator `G` is the same on the inputs
`A = 0` and `A = 1`, but the upstream potential tensor is not: `A_P(0) = 1`,
`A_P(1) = 3/2` (with the abstract exponential `1`, so `σ ≡ 1/2`). -/
theorem cache_equivalence_not_converse :
    energyCurvature ExpMap.one PowMap.base cexParams (fun _ _ => 0) =
      energyCurvature ExpMap.one PowMap.base cexParams (fun _ _ => 1) ∧
    metricAP ExpMap.one PowMap.base cexParams (fun _ _ => 0) 0 0 = 1 ∧
    metricAP ExpMap.one PowMap.base cexParams (fun _ _ => 1) 0 0 = 3 / 2 := by
  refine ⟨?_, ?_, ?_⟩
  · rw [cache_equivalence_zero_a _ _ _ rfl, cache_equivalence_zero_a _ _ _ rfl]
  · simp only [metricAP, metricLM, PowMap.base, cexParams, iSwiGLU, sigmoid, ExpMap.one,
      Mat.add_apply, Mat.mul_apply, Mat.one_apply, Mat.zero_apply, finSum_one]
    grind
  · simp only [metricAP, metricLM, PowMap.base, cexParams, iSwiGLU, sigmoid, ExpMap.one,
      Mat.add_apply, Mat.mul_apply, Mat.one_apply, Mat.zero_apply, finSum_one]
    grind

/-! ### Absorption of a constant metric -/

/-- The column of ones (`S × 1`), used to broadcast a bias row. -/
@[expose] def onesCol (S : Nat) : Mat α S 1 := fun _ _ => 1

/-- Row `n` of a matrix, as a `1 × d` matrix. -/
@[expose] def rowOf {S d : Nat} (Q : Mat α S d) (n : Fin S) : Mat α 1 d := fun _ j => Q n j

/-- Apply RoPE row by row: row `n` becomes `q_n R_nᵀ`. -/
@[expose] def rotateRows {S d : Nat} (R : Nat → Mat α d d) (Q : Mat α S d) : Mat α S d :=
  fun n j => (rowOf Q n ⬝ (R n.val)ᵀ) 0 j

/-- [collapse_absorption] Post-rotation form (always exact): attention with a constant
metric `G*` is plain SDPA on the queries `Q G*`. -/
theorem collapse_absorption_post_rotation (nrm : RowNorm α S) (τ : α) (Q K : Mat α S dk)
    (G : Mat α dk dk) (V : Mat α S dv) : attend nrm τ Q G K V = sdpa nrm τ (Q ⬝ G) K V :=
  rfl

/-- [collapse_absorption] `G*` folds into the affine query projection, weight and bias
together: `(X W_q + 1 b_qᵀ) G* = X (W_q G*) + 1 (b_qᵀ G*)`. -/
theorem collapse_absorption_affine (X : Mat α S dm) (Wq : Mat α dm dk) (bq : Mat α 1 dk)
    (G : Mat α dk dk) :
    (X ⬝ Wq + onesCol S ⬝ bq) ⬝ G = X ⬝ (Wq ⬝ G) + onesCol S ⬝ (bq ⬝ G) := by
  rw [Mat.add_mul, Mat.mul_assoc, Mat.mul_assoc]

/-- [collapse_absorption] Without RoPE: PLGA with a constant `G*` is SDPA with the
folded query projection `W_q G*`, `b_q G*`. -/
theorem collapse_absorption_no_rope (nrm : RowNorm α S) (τ : α) (X : Mat α S dm)
    (Wq : Mat α dm dk) (bq : Mat α 1 dk) (G : Mat α dk dk) (K : Mat α S dk) (V : Mat α S dv) :
    attend nrm τ (X ⬝ Wq + onesCol S ⬝ bq) G K V =
      sdpa nrm τ (X ⬝ (Wq ⬝ G) + onesCol S ⬝ (bq ⬝ G)) K V := by
  rw [collapse_absorption_post_rotation, collapse_absorption_affine]

/-- Rotating rows commutes with a right factor that commutes with every `R_nᵀ`. -/
theorem rotateRows_mul {S d : Nat} (R : Nat → Mat α d d) (Q : Mat α S d) (G : Mat α d d)
    (hG : ∀ n, G ⬝ (R n)ᵀ = (R n)ᵀ ⬝ G) : rotateRows R (Q ⬝ G) = rotateRows R Q ⬝ G := by
  apply Mat.ext; intro n j
  have h1 : rowOf (Q ⬝ G) n = rowOf Q n ⬝ G := rfl
  have h2 : (rotateRows R Q ⬝ G) n j = (rowOf Q n ⬝ (R n.val)ᵀ ⬝ G) 0 j := rfl
  simp only [rotateRows]
  rw [h1, h2, Mat.mul_assoc, hG, ← Mat.mul_assoc]

/-- [collapse_absorption] With RoPE: if `G*` commutes with every rotation `R_n` of an
orthogonal family (`R_n R_nᵀ = R_nᵀ R_n = I`), folding `G*` into the query projection
*before* rotation is exact: PLGA with the post-rotation `G*` equals plain SDPA with
queries `rotate(X (W_q G*) + 1 (b_q G*))`. -/
theorem collapse_absorption (nrm : RowNorm α S) (τ : α) (R : Nat → Mat α dk dk)
    (hT : ∀ n, (R n)ᵀ ⬝ R n = 1) (hT' : ∀ n, R n ⬝ (R n)ᵀ = 1) (G : Mat α dk dk)
    (hG : ∀ n, G ⬝ R n = R n ⬝ G) (X : Mat α S dm) (Wq : Mat α dm dk) (bq : Mat α 1 dk)
    (K : Mat α S dk) (V : Mat α S dv) :
    attend nrm τ (rotateRows R (X ⬝ Wq + onesCol S ⬝ bq)) G K V =
      sdpa nrm τ (rotateRows R (X ⬝ (Wq ⬝ G) + onesCol S ⬝ (bq ⬝ G))) K V := by
  have hGT : ∀ n, G ⬝ (R n)ᵀ = (R n)ᵀ ⬝ G := fun n =>
    Mat.commute_transpose_of_orthogonal (hT' n) (hT n) (hG n)
  rw [collapse_absorption_post_rotation, ← collapse_absorption_affine, rotateRows_mul R _ G hGT]

end Pldr

end

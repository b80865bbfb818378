module

public import Pldr.Float.Stages
public import Pldr.Decoding

/-!
# A decoder step in floating point, end to end  (`[fp_decoder_step]`, `[fp_cached_decode]`)

The forward errors of the stages compose: a stage is an exact map `f`, the computed map
`f̂` and an error propagator `β`, and its bound at an exact input `x` for an input error
`d` is `FpStage.Bounds`: every computed input `x̂` within `d` of `x` (entrywise) gives
`|f̂(x̂) − f(x)| ≤ β(x, d)` (entrywise). `β` takes the exact input, so it can be a
running bound in the actual magnitudes of the operands (`|x_i − μ|`, `Σ|a||b|`).

* `FpStage.comp`: the composition (`f₂ ∘ f₁`, `f̂₂ ∘ f̂₁`, `β₂(f₁ x, β₁(x, d))`), with
  `FpStage.Bounds.comp`; `FpStage.chain` of a list, with `ChainBounds` and
  `FpStage.Bounds.chain`; `FpStage.bounds_of_monotone`: a monotone `β` with
  `|f̂(x̂) − f(x)| ≤ β(x, |x̂ − x|)` bounds the stage at every `d`.
* `FpStage.residual`: `x + g(x)` rounded once (a sum: no absolute term), with
  `β = (1 + u)(d + β_g) + u |x + g(x)|` (`fp_decoder_step_residual`).
* `FpStage.affineStage`: an affine map `x W + b` (the output projection, the logits)
  whose kernel is within `B` of the map of its own input (`fp_mixed_precision`), with
  `β = B + Σ_k d_k |W_kj|` (`fp_decoder_step_affine`).
* `FpStage.layerNorm`: the two-pass LayerNorm kernel of `Pldr.Float.LayerNorm` built from a
  rounding of sums, a rounding of products, a mean routine, a variance routine and a
  reciprocal square root routine, with `β` the bound of `fp_layernorm`
  (`fp_decoder_step_layerNorm`: its hypotheses met for every computed input).
* `FpStage.decoderLayer`: attention sublayer → residual + LayerNorm → feed-forward
  sublayer → residual + LayerNorm; `FpStage.decoderStep`: embedding stage → layers →
  logits.
* `[fp_decoder_step]` `fp_decoder_step`: the step's logits are within the composed bound
  when every stage is bounded along the exact trajectory; `fp_decoder_step_layer` for one
  layer.
* `[fp_cached_decode]` `fp_cached_decode`: a cached decode (KV- and G-cache, the
  `decodeLoop` of `Pldr.Decoding`) and the uncached pass with the same metrics
  (`runWith`), each computed within its own bound of its exact value, differ by at most
  the sum of the two bounds: the exact values are equal (`incremental_decoding`);
  `_invariant`: against the recomputing pass `run` when the metrics are invariant.

Abstracted: the attention sublayer and the feed-forward sublayer enter as stages whose
bounds are hypotheses (`fp_head_scores`, `fp_head_output`, `fp_mixed_precision` give the
attention's, `fp_swiglu` the feed-forward block's); the reciprocal square root is an
`RSqrtExact` (the exact `1/√·` with `r² w = 1`, no model over `Rat`: `Real.sqrt`), its
routine's accuracy an interface parameter; overflow is outside the model. There are no
unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind FP

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-! ### Stages and their composition -/

/-- A stage of a floating-point pipeline from rows of length `m` to rows of length `n`:
the exact map, the computed map and the error propagator `β x d` (the output error at the
exact input `x` for an input error `d`). -/
structure FpStage (α : Type u) (m n : Nat) where
  /-- The exact map. -/
  f : (Fin m → α) → (Fin n → α)
  /-- The computed map. -/
  fh : (Fin m → α) → (Fin n → α)
  /-- The error propagator. -/
  β : (Fin m → α) → (Fin m → α) → (Fin n → α)

namespace FpStage

variable {m n k : Nat}

/-- The stage is bounded at the exact input `x` for the input error `d`: every computed
input within `d` of `x` gives an output within `β x d` of `f x`. -/
@[expose] def Bounds (s : FpStage α m n) (x d : Fin m → α) : Prop :=
  ∀ xh : Fin m → α, (∀ i, absv (xh i - x i) ≤ d i) → ∀ j, absv (s.fh xh j - s.f x j) ≤ s.β x d j

/-- The composition of two stages. -/
@[expose] def comp (s : FpStage α m n) (t : FpStage α n k) : FpStage α m k where
  f := fun x => t.f (s.f x)
  fh := fun x => t.fh (s.fh x)
  β := fun x d => t.β (s.f x) (s.β x d)

/-- Bounds compose along the exact trajectory. -/
theorem Bounds.comp {s : FpStage α m n} {t : FpStage α n k} {x d : Fin m → α}
    (hs : s.Bounds x d) (ht : t.Bounds (s.f x) (s.β x d)) : (s.comp t).Bounds x d :=
  fun xh hx j => ht (s.fh xh) (hs xh hx) j

/-- The identity stage (exact, error passed through). -/
@[expose] def id : FpStage α m m where
  f := fun x => x
  fh := fun x => x
  β := fun _ d => d

/-- The identity stage is bounded. -/
theorem id_bounds (x d : Fin m → α) : (FpStage.id : FpStage α m m).Bounds x d :=
  fun _ hx j => hx j

/-- A list of stages applied in order. -/
@[expose] def chain : List (FpStage α m m) → FpStage α m m
  | [] => FpStage.id
  | s :: rest => s.comp (chain rest)

/-- Every stage of a list bounded along the exact trajectory. -/
@[expose] def ChainBounds : List (FpStage α m m) → (Fin m → α) → (Fin m → α) → Prop
  | [], _, _ => True
  | s :: rest, x, d => s.Bounds x d ∧ ChainBounds rest (s.f x) (s.β x d)

/-- A chain of bounded stages is bounded. -/
theorem Bounds.chain : ∀ (l : List (FpStage α m m)) (x d : Fin m → α), ChainBounds l x d →
    (FpStage.chain l).Bounds x d
  | [], x, d, _ => id_bounds x d
  | _ :: rest, _, _, h => Bounds.comp h.1 (Bounds.chain rest _ _ h.2)

/-- A stage with a monotone propagator (`d ≤ d'` entrywise gives `β x d ≤ β x d'`) and
`|f̂(x̂) − f(x)| ≤ β(x, |x̂ − x|)` is bounded at every input error. -/
theorem bounds_of_monotone (s : FpStage α m n) (x : Fin m → α)
    (hmono : ∀ d d' : Fin m → α, (∀ i, d i ≤ d' i) → ∀ j, s.β x d j ≤ s.β x d' j)
    (h : ∀ xh, ∀ j, absv (s.fh xh j - s.f x j) ≤ s.β x (fun i => absv (xh i - x i)) j)
    (d : Fin m → α) : s.Bounds x d :=
  fun xh hx j => Std.le_trans (h xh j) (hmono _ d hx j)

/-! ### Residual connections and affine maps -/

/-- The residual connection `x + g(x)`, computed as `fl(x̂ + ĝ(x̂))`. -/
@[expose] def residual (R : Rounding α) (g : FpStage α m m) : FpStage α m m where
  f := fun x i => x i + g.f x i
  fh := fun x i => R.fl (x i + g.fh x i)
  β := fun x d i => (1 + R.u) * (d i + g.β x d i) + R.u * absv (x i + g.f x i)

/-- An affine stage `x W + b` whose computed map is within `B` of the affine map of its
own input. -/
@[expose] def affineStage (W : Fin m → Fin n → α) (b : Fin n → α)
    (yh : (Fin m → α) → Fin n → α) (B : Fin n → α) : FpStage α m n where
  f := fun x => affine x W b
  fh := yh
  β := fun _ d j => B j + finSum (fun k => d k * absv (W k j))

end FpStage

/-- [fp_decoder_step] The residual connection: `|x̂ − x| ≤ d`, the sublayer within
`β_g`, the sum rounded (`u`, no absolute term):
`|fl(x̂ + ĝ(x̂)) − (x + g(x))| ≤ (1 + u)(d + β_g) + u |x + g(x)|`. -/
theorem fp_decoder_step_residual {m : Nat} (R : Rounding α) (g : FpStage α m m)
    {x d : Fin m → α} (hg : g.Bounds x d) : (FpStage.residual R g).Bounds x d := by
  intro xh hx j
  have h1 : absv ((xh j + g.fh xh j) - (x j + g.f x j)) ≤ d j + g.β x d j := by
    have := absv_add_le (xh j - x j) (g.fh xh j - g.f x j)
    rw [show xh j - x j + (g.fh xh j - g.f x j) = (xh j + g.fh xh j) - (x j + g.f x j) by
      grind] at this
    have := hx j; have := hg xh hx j; grind
  have h := fp_round_add_le (b := 0) R.u_nonneg h1
    (by rw [Semiring.add_zero]; exact R.rel _)
  simp only [Semiring.add_zero] at h
  exact h

/-- [fp_decoder_step] An affine stage (output projection, logits): the kernel within `B_j`
of the affine map of its own input (`fp_mixed_precision`):
`|ŷ_j − (x W + b)_j| ≤ B_j + Σ_k d_k |W_kj|`. -/
theorem fp_decoder_step_affine {m n : Nat} (W : Fin m → Fin n → α) (b : Fin n → α)
    (yh : (Fin m → α) → Fin n → α) (B : Fin n → α) {x d : Fin m → α}
    (hy : ∀ xh : Fin m → α, (∀ i, absv (xh i - x i) ≤ d i) →
      ∀ j, absv (yh xh j - affine xh W b j) ≤ B j) :
    (FpStage.affineStage W b yh B).Bounds x d :=
  fun xh hx j => fp_linear_propagated x xh d W b j hx (hy xh hx j)

/-! ### LayerNorm as a stage -/

/-- An exact reciprocal square root: `r(w) > 0` and `r(w)² w = 1` for `w > 0`
(`w ↦ 1/√w`; no model over `Rat`, whose positive elements are not all squares). -/
structure RSqrtExact (α : Type u) [Field α] [LT α] where
  /-- `w ↦ 1/√w`. -/
  rs : α → α
  /-- `r(w) > 0` for `w > 0`. -/
  rs_pos : ∀ w, 0 < w → 0 < rs w
  /-- `r(w)² w = 1` for `w > 0`. -/
  rs_sq : ∀ w, 0 < w → rs w * rs w * w = 1

/-- A LayerNorm kernel: the roundings of sums and of products, and the routines for the
mean, the variance (of the centred row) and the reciprocal square root. -/
structure LnKernel (α : Type u) [Field α] [LE α] [LT α] [Std.LawfulOrderLT α]
    [Std.IsLinearOrder α] [OrderedRing α] (n : Nat) where
  /-- Rounding of sums and differences (no absolute term). -/
  S : Rounding α
  /-- Rounding of products. -/
  P : RoundingAbs α
  /-- The computed mean. -/
  mean : (Fin n → α) → α
  /-- The computed variance of a centred row. -/
  var : (Fin n → α) → α
  /-- The reciprocal square root routine. -/
  rsqrt : α → α

/-- The computed LayerNorm row: `ĉ = fl(x̂ − μ̂)`, `ŵ = fl(v̂(ĉ) + ε)`, `r̂ = rsqrt(ŵ)`,
`ŷ_i = fl(fl(fl(ĉ_i r̂) γ_i) + β_i)`. -/
@[expose] def LnKernel.apply {n : Nat} (K : LnKernel α n) (eps : α) (γ β x : Fin n → α) :
    Fin n → α :=
  fun i => K.S.fl (K.P.fl (K.P.fl (K.S.fl (x i - K.mean x) *
    K.rsqrt (K.S.fl (K.var (fun k => K.S.fl (x k - K.mean x)) + eps))) * γ i) + β i)

/-- The bound of `fp_layernorm` as a function of the exact row `x` and the input error `d`
(`Δμ x d` the mean's error, `e_v`, `η_v` the variance routine's, `u_rs` the reciprocal
square root's, `u` the larger of the two roundings' unit round-offs, `η` the products'
absolute term). -/
@[expose] def lnBound {n : Nat} (RS : RSqrtExact α) (eps u η urs ev ηv : α)
    (Δμ : (Fin n → α) → (Fin n → α) → α) (γ β x d : Fin n → α) : Fin n → α := fun i =>
  let μ := rowMean x
  let v := rowVar x
  let r := RS.rs (v + eps)
  let D := fun k => (1 + u) * (d k + Δμ x d) + u * absv (x k - μ)
  let Q := finSum (fun k => D k * (2 * absv (x k - μ) + D k)) * (n : α)⁻¹
  let V := (1 + ev) * Q + ev * v + ηv
  let W := (1 + u) * V + u * (v + eps)
  let ω := W * (v + eps - W)⁻¹
  let R := (1 + urs) * (1 + ω) - 1
  let T := (1 + u) * (D i * r + absv (x i - μ) * (R * r) + D i * (R * r)) +
    u * (absv (x i - μ) * r) + η
  let S := (1 + u) * (T * absv (γ i)) + u * (absv (x i - μ) * r * absv (γ i)) + η
  (1 + u) * S + u * absv (γ i * ((x i - μ) * r) + β i)

/-- The LayerNorm stage of a kernel. -/
@[expose] def FpStage.layerNorm {n : Nat} (K : LnKernel α n) (RS : RSqrtExact α)
    (eps u urs ev ηv : α) (Δμ : (Fin n → α) → (Fin n → α) → α) (γ β : Fin n → α) :
    FpStage α n n where
  f := fun x i => γ i * ((x i - rowMean x) * RS.rs (rowVar x + eps)) + β i
  fh := K.apply eps γ β
  β := fun x d => lnBound RS eps u K.P.η urs ev ηv Δμ γ β x d

/-- [fp_decoder_step] The LayerNorm stage is bounded (from `fp_layernorm`) when the mean
routine is within `Δμ x d` of the exact mean for every input within `d`, the variance
routine has relative and absolute errors `e_v`, `η_v`, the reciprocal square root routine
relative accuracy `u_rs`, both roundings unit round-off at most `u`, and the variance is
resolved (`W < v + ε`, `v + ε > 0`). -/
theorem fp_decoder_step_layerNorm {n : Nat} (hn : 0 < n) (K : LnKernel α n)
    (RS : RSqrtExact α) {eps u urs ev ηv : α} (Δμ : (Fin n → α) → (Fin n → α) → α)
    (γ β x d : Fin n → α) (hu : 0 ≤ u) (hurs : 0 ≤ urs) (hev : 0 ≤ ev)
    (hSu : K.S.u ≤ u) (hPu : K.P.u ≤ u)
    (hmean : ∀ xh : Fin n → α, (∀ i, absv (xh i - x i) ≤ d i) →
      absv (K.mean xh - rowMean x) ≤ Δμ x d)
    (hvar : ∀ c : Fin n → α, absv (K.var c - finSum (fun i => c i * c i) * (n : α)⁻¹) ≤
      ev * (finSum (fun i => c i * c i) * (n : α)⁻¹) + ηv)
    (hrs : ∀ w, 0 < w → absv (K.rsqrt w - RS.rs w) ≤ urs * RS.rs w)
    (hw0 : 0 < rowVar x + eps)
    (hWlt : (1 + u) * ((1 + ev) * (finSum (fun k => ((1 + u) * (d k + Δμ x d) +
        u * absv (x k - rowMean x)) * (2 * absv (x k - rowMean x) + ((1 + u) * (d k + Δμ x d) +
        u * absv (x k - rowMean x)))) * (n : α)⁻¹) + ev * rowVar x + ηv) +
      u * (rowVar x + eps) < rowVar x + eps) :
    (FpStage.layerNorm K RS eps u urs ev ηv Δμ γ β).Bounds x d := by
  intro xh hx i
  -- every rounding at `u`
  have hS : ∀ z, absv (K.S.fl z - z) ≤ u * absv z := fun z =>
    Std.le_trans (K.S.rel z) (OrderedRing.mul_le_mul_of_nonneg_right hSu (absv_nonneg z))
  have hP : ∀ z, absv (K.P.fl z - z) ≤ u * absv z + K.P.η := fun z => by
    have := K.P.rel z
    have := OrderedRing.mul_le_mul_of_nonneg_right hPu (absv_nonneg z)
    grind
  generalize hμh : K.mean xh = μh
  have hμ := hmean xh hx
  rw [hμh] at hμ
  generalize hch : (fun k => K.S.fl (xh k - μh)) = ch
  have hc : ∀ k, absv (ch k - (xh k - μh)) ≤ u * absv (xh k - μh) := fun k => by
    rw [← hch]; exact hS _
  generalize hvh : K.var ch = vh
  have hv := hvar ch
  rw [hvh] at hv
  generalize hwh : K.S.fl (vh + eps) = wh
  have hw : absv (wh - (vh + eps)) ≤ u * absv (vh + eps) := by rw [← hwh]; exact hS _
  obtain ⟨D, hD⟩ : ∃ D : Fin n → α,
      ∀ k, D k = (1 + u) * (d k + Δμ x d) + u * absv (x k - rowMean x) := ⟨_, fun _ => rfl⟩
  have eD : D = fun k => (1 + u) * (d k + Δμ x d) + u * absv (x k - rowMean x) := funext hD
  obtain ⟨Q, hQ⟩ : ∃ Q : α,
      Q = finSum (fun k => D k * (2 * absv (x k - rowMean x) + D k)) * (n : α)⁻¹ := ⟨_, rfl⟩
  obtain ⟨V, hV⟩ : ∃ V : α, V = (1 + ev) * Q + ev * rowVar x + ηv := ⟨_, rfl⟩
  obtain ⟨W, hW⟩ : ∃ W : α, W = (1 + u) * V + u * (rowVar x + eps) := ⟨_, rfl⟩
  have hWlt' : W < rowVar x + eps := by rw [hW, hV, hQ, eD]; exact hWlt
  obtain ⟨ω, hω⟩ : ∃ ω : α, ω = W * (rowVar x + eps - W)⁻¹ := ⟨_, rfl⟩
  obtain ⟨R, hR⟩ : ∃ R : α, R = (1 + urs) * (1 + ω) - 1 := ⟨_, rfl⟩
  obtain ⟨T, hTdef⟩ : ∃ T : Fin n → α, ∀ k, T k = (1 + u) * (D k * RS.rs (rowVar x + eps) +
      absv (x k - rowMean x) * (R * RS.rs (rowVar x + eps)) + D k * (R * RS.rs (rowVar x + eps))) +
      u * (absv (x k - rowMean x) * RS.rs (rowVar x + eps)) + K.P.η := ⟨_, fun _ => rfl⟩
  obtain ⟨S, hSdef⟩ : ∃ S : Fin n → α, ∀ k, S k = (1 + u) * (T k * absv (γ k)) +
      u * (absv (x k - rowMean x) * RS.rs (rowVar x + eps) * absv (γ k)) + K.P.η :=
    ⟨_, fun _ => rfl⟩
  have hWb := fp_layernorm_stats (Q := Q) (V := V) (W := W) hn x xh d ch D hu hev hx hμ hc hv
    hw hw0 hD hQ hV hW
  have hwh0 : 0 < wh := by have := absv_le_iff.mp hWb; grind
  have hρ0 := RS.rs_pos wh hwh0
  have hρ := RS.rs_sq wh hwh0
  have hr0 := RS.rs_pos _ hw0
  have hr := RS.rs_sq _ hw0
  generalize hrh : K.rsqrt wh = rh
  have hrh' := hrs wh hwh0
  rw [hrh] at hrh'
  generalize hth : (fun k => K.P.fl (ch k * rh)) = th
  generalize hsh : (fun k => K.P.fl (th k * γ k)) = sh
  have hth' : ∀ k, absv (th k - ch k * rh) ≤ u * absv (ch k * rh) + K.P.η := fun k => by
    rw [← hth]; exact hP _
  have hsh' : ∀ k, absv (sh k - th k * γ k) ≤ u * absv (th k * γ k) + K.P.η := fun k => by
    rw [← hsh]; exact hP _
  have hyh' : ∀ k, absv (K.S.fl (sh k + β k) - (sh k + β k)) ≤ u * absv (sh k + β k) :=
    fun k => hS _
  have h := fp_layernorm (eps := eps) (u := u) (η := K.P.η) (urs := urs) (Δμ := Δμ x d)
    (ev := ev) (ηv := ηv) (μh := μh) (vh := vh) (wh := wh) (ρ := RS.rs wh) (rh := rh)
    (r := RS.rs (rowVar x + eps)) (Q := Q) (V := V) (W := W) (ω := ω) (R := R)
    hn x xh d γ β ch th sh (fun k => K.S.fl (sh k + β k)) D T S
    hu hurs hev hx hμ hc hv hw hρ0 hρ hrh' hr0 hr hth' hsh' hyh' hD hQ hV hW hWlt' hω hR hTdef hSdef i
  have e : (FpStage.layerNorm K RS eps u urs ev ηv Δμ γ β).fh xh i = K.S.fl (sh i + β i) := by
    show K.apply eps γ β xh i = _
    unfold LnKernel.apply
    rw [hμh, ← hsh, ← hth, ← hrh, ← hwh, ← hvh, ← hch]
  have hb : (FpStage.layerNorm K RS eps u urs ev ηv Δμ γ β).β x d i =
      (1 + u) * S i + u * absv (γ i * ((x i - rowMean x) * RS.rs (rowVar x + eps)) + β i) := by
    rw [hSdef i, hTdef i, hR, hω, hW, hV, hQ, eD]
    rfl
  have hf : (FpStage.layerNorm K RS eps u urs ev ηv Δμ γ β).f x i =
      γ i * ((x i - rowMean x) * RS.rs (rowVar x + eps)) + β i := rfl
  rw [e, hb, hf]
  exact h

/-! ### The decoder -/

/-- One decoder layer: attention sublayer, residual + LayerNorm, feed-forward sublayer,
residual + LayerNorm (post-LayerNorm, `docs/plga-spec.md` §6). -/
@[expose] def FpStage.decoderLayer {m : Nat} (R : Rounding α) (attn ffn ln1 ln2 : FpStage α m m) :
    FpStage α m m :=
  ((FpStage.residual R attn).comp ln1).comp ((FpStage.residual R ffn).comp ln2)

/-- A decoder step: the embedding stage (scaled embedding and its LayerNorm), the layers
in order, the logits. -/
@[expose] def FpStage.decoderStep {e m v : Nat} (emb : FpStage α e m) (layers : List (FpStage α m m))
    (logits : FpStage α m v) : FpStage α e v :=
  (emb.comp (FpStage.chain layers)).comp logits

/-- [fp_decoder_step] One decoder layer is bounded when its four stages are bounded along
the exact trajectory: the attention sublayer at `(x, d)`, the first LayerNorm at the
residual's exact output and bound, the feed-forward sublayer at the first LayerNorm's,
the second LayerNorm at the second residual's. -/
theorem fp_decoder_step_layer {m : Nat} (R : Rounding α) (attn ffn ln1 ln2 : FpStage α m m)
    {x d : Fin m → α} (hattn : attn.Bounds x d)
    (hln1 : ln1.Bounds ((FpStage.residual R attn).f x) ((FpStage.residual R attn).β x d))
    (hffn : ffn.Bounds (ln1.f ((FpStage.residual R attn).f x))
      (ln1.β ((FpStage.residual R attn).f x) ((FpStage.residual R attn).β x d)))
    (hln2 : ln2.Bounds ((FpStage.residual R ffn).f (ln1.f ((FpStage.residual R attn).f x)))
      ((FpStage.residual R ffn).β (ln1.f ((FpStage.residual R attn).f x))
        (ln1.β ((FpStage.residual R attn).f x) ((FpStage.residual R attn).β x d)))) :
    (FpStage.decoderLayer R attn ffn ln1 ln2).Bounds x d :=
  FpStage.Bounds.comp (FpStage.Bounds.comp (fp_decoder_step_residual R attn hattn) hln1)
    (FpStage.Bounds.comp (fp_decoder_step_residual R ffn hffn) hln2)

/-- [fp_decoder_step] A decoder step in floating point, end to end (the forward error of a
composition of stages, Higham, *Accuracy and Stability of Numerical Algorithms*, §3.3 and
§2.2; the decoder of `docs/plga-spec.md` §6, one token's row): an embedding stage, a list
of layers (`FpStage.decoderLayer`: attention (`fp_head_scores`, `fp_head_output`, the
output projection), residual + LayerNorm (`fp_decoder_step_residual`,
`fp_decoder_step_layerNorm`), feed-forward (`fp_swiglu`), residual + LayerNorm) and the
logits (`fp_decoder_step_affine`): if every stage is bounded along the exact trajectory
(`ChainBounds`), the computed logits are within the composed bound
`β_logits(·, β_layers(·, β_emb(x, d)))` of the exact logits. -/
theorem fp_decoder_step {e m v : Nat} (emb : FpStage α e m) (layers : List (FpStage α m m))
    (logits : FpStage α m v) {x d : Fin e → α} (hemb : emb.Bounds x d)
    (hlayers : FpStage.ChainBounds layers (emb.f x) (emb.β x d))
    (hlogits : logits.Bounds ((FpStage.chain layers).f (emb.f x))
      ((FpStage.chain layers).β (emb.f x) (emb.β x d))) :
    (FpStage.decoderStep emb layers logits).Bounds x d :=
  FpStage.Bounds.comp (FpStage.Bounds.comp hemb (FpStage.Bounds.chain layers _ _ hlayers))
    hlogits

/-! ### Cached against uncached decoding -/

section Cached

variable {dm dk dv H : Nat}

/-- [fp_cached_decode] A cached decode against the uncached pass (`incremental_decoding`
in floating point): decoding token by token with a KV-cache and a G-cache (`decodeLoop`)
and the uncached forward pass with the same metrics supplied (`runWith`) are equal in
exact arithmetic (`incremental_decoding`); so if the cached kernel's outputs `Ŷ_c` are
within `B_c` of the exact decoded rows and the uncached kernel's `Ŷ_u` within `B_u` of
the exact pass (each bounded by `fp_decoder_step`), then
`|Ŷ_c − Ŷ_u| ≤ B_c + B_u` entrywise. -/
theorem fp_cached_decode (E : ExpMap α) (τ : α) (layers : List (SeqCLayer α dm dk dv H))
    (n : Nat) (X : Mat α n dm) (Yc Yu Bc Bu : Mat α n dm)
    (hc : ∀ i j, absv (Yc i j - (decodeLoop E τ layers n X).2 i j) ≤ Bc i j)
    (hu : ∀ i j, absv (Yu i j - runWith E τ layers X i j) ≤ Bu i j) (i : Fin n) (j : Fin dm) :
    absv (Yc i j - Yu i j) ≤ Bc i j + Bu i j := by
  have hex := (incremental_decoding E τ layers n X).1
  have h1 := hc i j
  rw [hex] at h1
  have h2 := hu i j
  have := absv_sub_le_sub_add_sub (Yc i j) (runWith E τ layers X i j) (Yu i j)
  have e : absv (runWith E τ layers X i j - Yu i j) = absv (Yu i j - runWith E τ layers X i j) := by
    rw [show runWith E τ layers X i j - Yu i j = -(Yu i j - runWith E τ layers X i j) by grind,
      absv_neg']
  grind

/-- [fp_cached_decode] Against the recomputing pass: when the metrics are invariant along
the pass (`InvariantPass`), the cached decode and the full recomputing pass `run` (each
computed within its bound) differ by at most `B_c + B_u`. -/
theorem fp_cached_decode_invariant (E : ExpMap α) (τ : α)
    (layers : List (SeqCLayer α dm dk dv H)) (n : Nat) (X : Mat α n dm)
    (hinv : InvariantPass E τ layers X) (Yc Yu Bc Bu : Mat α n dm)
    (hc : ∀ i j, absv (Yc i j - (decodeLoop E τ layers n X).2 i j) ≤ Bc i j)
    (hu : ∀ i j, absv (Yu i j - run E τ layers X i j) ≤ Bu i j) (i : Fin n) (j : Fin dm) :
    absv (Yc i j - Yu i j) ≤ Bc i j + Bu i j := by
  have hex := (incremental_decoding E τ layers n X).2.2 hinv
  have h1 := hc i j
  rw [hex] at h1
  have h2 := hu i j
  have := absv_sub_le_sub_add_sub (Yc i j) (run E τ layers X i j) (Yu i j)
  have e : absv (run E τ layers X i j - Yu i j) = absv (Yu i j - run E τ layers X i j) := by
    rw [show run E τ layers X i j - Yu i j = -(Yu i j - run E τ layers X i j) by grind,
      absv_neg']
  grind

end Cached

end Pldr

end

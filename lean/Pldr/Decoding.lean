module

public import Pldr.Prefix

/-!
# Token-by-token decoding with a growing KV-cache and a G-cache
(`[incremental_decoding]`)

Paper / reference decoder: generation runs one token at a time. Each layer keeps a
KV-cache (the keys and values of all earlier positions, one row appended per step) and a
G-cache (the metric `G*` of each head, computed once, on the prompt pass, and reused at
every later step). This file defines that loop on a variable-length model and proves it
computes exactly the full causal forward pass.

The model. A layer (`SeqLayer`) has `H` heads with *row-wise* query/key/value maps
(position `n` and the residual-stream row at `n`: projections with bias, RoPE), a
per-head metric map defined for every sequence length (the PLGA pipeline through the
Gram of the head's queries: global over the rows of the call), and a row-wise
post-processing (concatenation, output projection, residual, LayerNorm, FFN). A model is
a list of layers, each with its G-cache (`SeqCLayer`).

* `forwardWith` / `runWith`: full causal pass with the cached metrics supplied;
  `forward` / `run`: full causal pass recomputing every metric from the layer input.
* `decodeStep`: one step at position `n`: the new row goes through every layer, which
  appends its key/value rows to its cache and attends from the new query row over all
  `n + 1` cached rows with the cached `G*`; `decodeLoop n X` runs it for the rows of `X`
  one after another from an empty cache.

Results.
* `incremental_decoding`: for every length `n` and every input `X`, the decoder's outputs
  are the rows of `runWith X` (the forward pass with the cached `G*` supplied), and its
  caches hold exactly the keys and values of that pass; if in addition the metrics are
  invariant along the pass on `X` (`InvariantPass`), the outputs are the full forward
  pass `run X`.
* `incremental_decoding_prefixes`: on every prefix `X[:m]` on which the metrics are
  invariant, the first `m` decoded rows equal `run X[:m]`.
* `incremental_decoding_prompt`: with the G-cache filled from a prompt `P` (the metrics
  met by the forward pass on `P`, as the reference decoder does), decoding `P ++ rest`
  equals the forward pass with that `G` supplied, and its first `|P|` rows equal the
  full forward pass on the prompt exactly.

Abstracted: the per-row maps and the metric maps are arbitrary functions (so RoPE,
biases, LayerNorm, SwiGLU and the PLGA pipeline are all admitted); `exp` is an `ExpMap`.
The decode loop is fed the embedded rows of the whole sequence (teacher forcing); a
sampler that chooses the next token from the last output row fits on top unchanged,
because the equality holds for every input. There are no unproved assumptions.
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

/-- A decoder layer for sequences of any length, with `H` heads: row-wise query, key and
value maps (given the position), metric maps defined on inputs of every length, and a
row-wise post-processing of the input row and the heads' output rows. -/
structure SeqLayer (α : Type u) (dm dk dv H : Nat) where
  /-- Query row of head `h` at position `n` from the input row. -/
  q : Fin H → Nat → (Fin dm → α) → (Fin dk → α)
  /-- Key row of head `h` at position `n`. -/
  k : Fin H → Nat → (Fin dm → α) → (Fin dk → α)
  /-- Value row of head `h` at position `n`. -/
  v : Fin H → Nat → (Fin dm → α) → (Fin dv → α)
  /-- The metric `G` of head `h` computed from a whole input of length `n`. -/
  metric : Fin H → (n : Nat) → Mat α n dm → Mat α dk dk
  /-- Output projection, residual, LayerNorm, FFN: row-wise. -/
  post : (Fin dm → α) → (Fin H → Fin dv → α) → (Fin dm → α)

/-- A layer together with its G-cache. -/
structure SeqCLayer (α : Type u) (dm dk dv H : Nat) where
  /-- The layer. -/
  layer : SeqLayer α dm dk dv H
  /-- The cached metric of every head. -/
  gstar : Fin H → Mat α dk dk

variable {dm dk dv H : Nat}

namespace SeqLayer

/-- Queries of head `h` for a whole input. -/
@[expose] def Q (L : SeqLayer α dm dk dv H) (h : Fin H) {n : Nat} (X : Mat α n dm) :
    Mat α n dk := fun i => L.q h i.val (X i)

/-- Keys of head `h` for a whole input. -/
@[expose] def K (L : SeqLayer α dm dk dv H) (h : Fin H) {n : Nat} (X : Mat α n dm) :
    Mat α n dk := fun i => L.k h i.val (X i)

/-- Values of head `h` for a whole input. -/
@[expose] def V (L : SeqLayer α dm dk dv H) (h : Fin H) {n : Nat} (X : Mat α n dm) :
    Mat α n dv := fun i => L.v h i.val (X i)

/-- The full causal pass of the layer with metrics `gs` supplied. -/
@[expose] def forwardWith (L : SeqLayer α dm dk dv H) (E : ExpMap α) (τ : α)
    (gs : Fin H → Mat α dk dk) {n : Nat} (X : Mat α n dm) : Mat α n dm :=
  fun i => L.post (X i) (fun h => attend (causalSoftmax E) τ (L.Q h X) (gs h) (L.K h X)
    (L.V h X) i)

/-- The full causal pass of the layer, each head computing its metric from the input. -/
@[expose] def forward (L : SeqLayer α dm dk dv H) (E : ExpMap α) (τ : α) {n : Nat}
    (X : Mat α n dm) : Mat α n dm :=
  L.forwardWith E τ (fun h => L.metric h n X) X

end SeqLayer

/-- The full pass of the model with the cached metrics supplied. -/
@[expose] def runWith (E : ExpMap α) (τ : α) {n : Nat} : List (SeqCLayer α dm dk dv H) →
    Mat α n dm → Mat α n dm
  | [], X => X
  | ℓ :: rest, X => runWith E τ rest (ℓ.layer.forwardWith E τ ℓ.gstar X)

/-- The full pass of the model recomputing every metric. -/
@[expose] def run (E : ExpMap α) (τ : α) {n : Nat} : List (SeqCLayer α dm dk dv H) →
    Mat α n dm → Mat α n dm
  | [], X => X
  | ℓ :: rest, X => run E τ rest (ℓ.layer.forward E τ X)

/-- Invariance along the full pass on `X`: at every layer the metric computed from the
input reaching that layer equals the cached one. -/
@[expose] def InvariantPass (E : ExpMap α) (τ : α) {n : Nat} :
    List (SeqCLayer α dm dk dv H) → Mat α n dm → Prop
  | [], _ => True
  | ℓ :: rest, X => (∀ h, ℓ.layer.metric h n X = ℓ.gstar h) ∧
      InvariantPass E τ rest (ℓ.layer.forward E τ X)

/-! ### The decoder -/

/-- The KV-cache of one layer after `n` tokens: `n` key rows and `n` value rows per head. -/
@[expose] abbrev KVCache (α : Type u) (dk dv H n : Nat) : Type u :=
  Fin H → Mat α n dk × Mat α n dv

/-- Append one row to a matrix. -/
@[expose] def snocRow {n d : Nat} (X : Mat α n d) (r : Fin d → α) : Mat α (n + 1) d :=
  fun i => Fin.lastCases (motive := fun _ => Fin d → α) r X i

/-- The empty KV-cache. -/
@[expose] def emptyCache : KVCache α dk dv H 0 := fun _ => (fun i => i.elim0, fun i => i.elim0)

/-- One decoding step of one layer at position `n`: append this position's key and value
rows to the cache, and attend from the new query row over the `n + 1` cached rows (all
visible) with the cached metric. Returns the grown cache and the layer's output row. -/
@[expose] def layerStep (E : ExpMap α) (τ : α) (ℓ : SeqCLayer α dm dk dv H) {n : Nat}
    (c : KVCache α dk dv H n) (x : Fin dm → α) : KVCache α dk dv H (n + 1) × (Fin dm → α) :=
  let c' : KVCache α dk dv H (n + 1) := fun h =>
    (snocRow (c h).1 (ℓ.layer.k h n x), snocRow (c h).2 (ℓ.layer.v h n x))
  let heads : Fin H → Fin dv → α := fun h l =>
    finSum fun j => msoftmax E (fun _ => true)
        (scores τ (fun _ => ℓ.layer.q h n x) (ℓ.gstar h) (c' h).1 (Fin.last n)) j * (c' h).2 j l
  (c', ℓ.layer.post x heads)

/-- One decoding step of the whole model at position `n`: the new row passes through the
layers in order, each with its own cache. -/
@[expose] def decodeStep (E : ExpMap α) (τ : α) {n : Nat} :
    List (SeqCLayer α dm dk dv H × KVCache α dk dv H n) → (Fin dm → α) →
      List (SeqCLayer α dm dk dv H × KVCache α dk dv H (n + 1)) × (Fin dm → α)
  | [], x => ([], x)
  | (ℓ, c) :: rest, x =>
    let r := layerStep E τ ℓ c x
    let s := decodeStep E τ rest r.2
    ((ℓ, r.1) :: s.1, s.2)

/-- The decode loop: feed the rows of `X` one at a time, from empty caches; returns the
final caches and the output rows. -/
@[expose] def decodeLoop (E : ExpMap α) (τ : α) (layers : List (SeqCLayer α dm dk dv H)) :
    (n : Nat) → Mat α n dm →
      List (SeqCLayer α dm dk dv H × KVCache α dk dv H n) × Mat α n dm
  | 0, _ => (layers.map fun ℓ => (ℓ, emptyCache), fun i => i.elim0)
  | n + 1, X =>
    let r := decodeLoop E τ layers n (takeRows (t := 1) X)
    let s := decodeStep E τ r.1 (X (Fin.last n))
    (s.1, snocRow r.2 s.2)

/-! ### Proofs -/

/-- The caches a full pass with supplied metrics would hold: the keys and values of every
layer's input. -/
@[expose] def cachesOf (E : ExpMap α) (τ : α) {n : Nat} : List (SeqCLayer α dm dk dv H) →
    Mat α n dm → List (SeqCLayer α dm dk dv H × KVCache α dk dv H n)
  | [], _ => []
  | ℓ :: rest, X => (ℓ, fun h => (ℓ.layer.K h X, ℓ.layer.V h X)) ::
      cachesOf E τ rest (ℓ.layer.forwardWith E τ ℓ.gstar X)

/-- A matrix is its first rows with its last row appended. -/
theorem snocRow_takeRows {n d : Nat} (X : Mat α (n + 1) d) :
    snocRow (takeRows (t := 1) X) (X (Fin.last n)) = X := by
  funext i
  induction i using Fin.lastCases with
  | last => simp [snocRow]
  | cast i => simp [snocRow, takeRows] <;> rfl

/-- Matrices with no rows are all equal. -/
theorem mat_zero_rows {d : Nat} (X Y : Mat α 0 d) : X = Y := funext fun i => i.elim0

/-- Row-wise maps commute with taking a prefix. -/
theorem SeqLayer.takeRows_Q (L : SeqLayer α dm dk dv H) (h : Fin H) {m t : Nat}
    (X : Mat α (m + t) dm) : takeRows (L.Q h X) = L.Q h (takeRows X) := rfl

/-- The last causal row sees every position. -/
theorem causalMask_last (n : Nat) : causalMask (Fin.last n) = fun _ => true := by
  funext j; simp [causalMask, Fin.le_last]

/-- The layer with supplied metrics is prefix-consistent. -/
theorem SeqLayer.forwardWith_takeRows (L : SeqLayer α dm dk dv H) (E : ExpMap α) (τ : α)
    (gs : Fin H → Mat α dk dk) {m t : Nat} (X : Mat α (m + t) dm) :
    L.forwardWith E τ gs (takeRows X) = takeRows (L.forwardWith E τ gs X) := by
  funext i
  show L.post (X (Fin.castAdd t i)) (fun h => attend (causalSoftmax E) τ (L.Q h (takeRows X))
      (gs h) (L.K h (takeRows X)) (L.V h (takeRows X)) i) =
    L.post (X (Fin.castAdd t i)) (fun h => attend (causalSoftmax E) τ (L.Q h X) (gs h)
      (L.K h X) (L.V h X) (Fin.castAdd t i))
  congr 1; funext h
  exact (congrFun (prefix_consistency E τ (gs h) (L.Q h X) (L.K h X) (L.V h X)) i).symm

/-- The model with supplied metrics is prefix-consistent. -/
theorem runWith_takeRows (E : ExpMap α) (τ : α) (layers : List (SeqCLayer α dm dk dv H))
    {m t : Nat} (X : Mat α (m + t) dm) :
    runWith E τ layers (takeRows X) = takeRows (runWith E τ layers X) := by
  induction layers generalizing X with
  | nil => rfl
  | cons ℓ rest ih =>
    show runWith E τ rest (ℓ.layer.forwardWith E τ ℓ.gstar (takeRows X)) =
      takeRows (runWith E τ rest (ℓ.layer.forwardWith E τ ℓ.gstar X))
    rw [SeqLayer.forwardWith_takeRows, ih]

/-- One layer step on the caches of a prefix gives the caches of the longer input and
the last row of the layer's output. -/
theorem layerStep_eq (E : ExpMap α) (τ : α) (ℓ : SeqCLayer α dm dk dv H) {n : Nat}
    (X : Mat α (n + 1) dm) :
    layerStep E τ ℓ (fun h => (ℓ.layer.K h (takeRows (t := 1) X),
        ℓ.layer.V h (takeRows (t := 1) X))) (X (Fin.last n)) =
      ((fun h => (ℓ.layer.K h X, ℓ.layer.V h X)),
        ℓ.layer.forwardWith E τ ℓ.gstar X (Fin.last n)) := by
  have hK : ∀ h, snocRow (ℓ.layer.K h (takeRows (t := 1) X)) (ℓ.layer.k h n (X (Fin.last n)))
      = ℓ.layer.K h X := fun h => by
    have := snocRow_takeRows (ℓ.layer.K h X); exact this
  have hV : ∀ h, snocRow (ℓ.layer.V h (takeRows (t := 1) X)) (ℓ.layer.v h n (X (Fin.last n)))
      = ℓ.layer.V h X := fun h => by
    have := snocRow_takeRows (ℓ.layer.V h X); exact this
  simp only [layerStep, hK, hV]
  congr 1
  show ℓ.layer.post (X (Fin.last n)) _ = ℓ.layer.post (X (Fin.last n)) _
  congr 1
  funext h l
  simp only [attend, weights, Mat.mul_apply, causalSoftmax, causalMask_last]
  rfl

/-- One model step on the caches of a prefix gives the caches of the longer input and the
last output row. -/
theorem decodeStep_eq (E : ExpMap α) (τ : α) (layers : List (SeqCLayer α dm dk dv H))
    {n : Nat} (X : Mat α (n + 1) dm) :
    decodeStep E τ (cachesOf E τ layers (takeRows (t := 1) X)) (X (Fin.last n)) =
      (cachesOf E τ layers X, runWith E τ layers X (Fin.last n)) := by
  induction layers generalizing X with
  | nil => rfl
  | cons ℓ rest ih =>
    have h1 : ℓ.layer.forwardWith E τ ℓ.gstar (takeRows (t := 1) X) =
        takeRows (t := 1) (ℓ.layer.forwardWith E τ ℓ.gstar X) :=
      SeqLayer.forwardWith_takeRows ℓ.layer E τ ℓ.gstar X
    simp only [cachesOf, decodeStep, runWith, layerStep_eq, h1, ih]

/-- The decode loop's state is the caches and the output of the full pass with the
cached metrics supplied. -/
theorem decodeLoop_eq (E : ExpMap α) (τ : α) (layers : List (SeqCLayer α dm dk dv H)) :
    ∀ (n : Nat) (X : Mat α n dm),
      decodeLoop E τ layers n X = (cachesOf E τ layers X, runWith E τ layers X)
  | 0, X => by
    simp only [decodeLoop]
    congr 1
    · induction layers generalizing X with
      | nil => rfl
      | cons ℓ rest ih =>
        simp only [List.map, cachesOf]
        congr 1
        · congr 1; funext h
          exact Prod.ext (mat_zero_rows _ _) (mat_zero_rows _ _)
        · exact ih _
    · exact mat_zero_rows _ _
  | n + 1, X => by
    have ih := decodeLoop_eq E τ layers n (takeRows (t := 1) X)
    simp only [decodeLoop, ih, decodeStep_eq, runWith_takeRows, snocRow_takeRows]

/-- Invariance along the pass makes the recomputing model equal the cached one. -/
theorem run_eq_runWith (E : ExpMap α) (τ : α) (layers : List (SeqCLayer α dm dk dv H))
    {n : Nat} (X : Mat α n dm) (hX : InvariantPass E τ layers X) :
    run E τ layers X = runWith E τ layers X := by
  induction layers generalizing X with
  | nil => rfl
  | cons ℓ rest ih =>
    obtain ⟨h1, h2⟩ := hX
    have e : ℓ.layer.forward E τ X = ℓ.layer.forwardWith E τ ℓ.gstar X := by
      simp only [SeqLayer.forward]
      have : (fun h => ℓ.layer.metric h n X) = ℓ.gstar := funext h1
      rw [this]
    show run E τ rest (ℓ.layer.forward E τ X) =
      runWith E τ rest (ℓ.layer.forwardWith E τ ℓ.gstar X)
    rw [← e]
    exact ih _ h2

/-- [incremental_decoding] Token-by-token decoding with a KV-cache that grows by one row
per step and a G-cache, for every length `n` and every input `X`: the decoded rows are
the forward pass with the cached metrics supplied (`runWith`) and the caches hold that
pass's keys and values; when the metrics are invariant along the pass on `X`, the decoded
rows are the full recomputing forward pass (`run`). -/
theorem incremental_decoding (E : ExpMap α) (τ : α) (layers : List (SeqCLayer α dm dk dv H))
    (n : Nat) (X : Mat α n dm) :
    (decodeLoop E τ layers n X).2 = runWith E τ layers X ∧
      (decodeLoop E τ layers n X).1 = cachesOf E τ layers X ∧
      (InvariantPass E τ layers X → (decodeLoop E τ layers n X).2 = run E τ layers X) := by
  rw [decodeLoop_eq]
  exact ⟨rfl, rfl, fun h => (run_eq_runWith E τ layers X h).symm⟩

/-- [incremental_decoding] Every prefix: if the metrics are invariant along the full pass
on the prefix `X[:m]`, the first `m` decoded rows of `X` equal that full pass. -/
theorem incremental_decoding_prefixes (E : ExpMap α) (τ : α)
    (layers : List (SeqCLayer α dm dk dv H)) {m t : Nat} (X : Mat α (m + t) dm)
    (hinv : InvariantPass E τ layers (takeRows X)) :
    takeRows (decodeLoop E τ layers (m + t) X).2 = run E τ layers (takeRows X) := by
  rw [(incremental_decoding E τ layers _ X).1, ← runWith_takeRows,
    run_eq_runWith E τ layers _ hinv]

/-- The G-cache filled from a forward pass: each layer stores the metrics that the full
pass on the prompt meets at that layer. -/
@[expose] def fillCache (E : ExpMap α) (τ : α) {n : Nat} : List (SeqLayer α dm dk dv H) →
    Mat α n dm → List (SeqCLayer α dm dk dv H)
  | [], _ => []
  | L :: rest, P => ⟨L, fun h => L.metric h n P⟩ :: fillCache E τ rest (L.forward E τ P)

/-- The pass that filled the cache is invariant for it. -/
theorem invariantPass_fillCache (E : ExpMap α) (τ : α) (layers : List (SeqLayer α dm dk dv H))
    {n : Nat} (P : Mat α n dm) : InvariantPass E τ (fillCache E τ layers P) P := by
  induction layers generalizing P with
  | nil => exact True.intro
  | cons L rest ih => exact And.intro (fun _ => rfl) (ih _)

/-- [incremental_decoding] The reference decoder's semantics: with the G-cache filled from
the prompt `P` (its first `m` rows), decoding the whole sequence equals the forward pass
with that `G` supplied, and the first `m` decoded rows equal the full forward pass on the
prompt exactly. -/
theorem incremental_decoding_prompt (E : ExpMap α) (τ : α) (layers : List (SeqLayer α dm dk dv H))
    {m t : Nat} (X : Mat α (m + t) dm) :
    (decodeLoop E τ (fillCache E τ layers (takeRows X)) (m + t) X).2 =
        runWith E τ (fillCache E τ layers (takeRows X)) X ∧
      takeRows (decodeLoop E τ (fillCache E τ layers (takeRows X)) (m + t) X).2 =
        run E τ (fillCache E τ layers (takeRows X)) (takeRows X) :=
  ⟨(incremental_decoding E τ _ _ X).1,
    incremental_decoding_prefixes E τ _ X (invariantPass_fillCache E τ layers _)⟩

end Pldr

end

module

public import Pldr.Algebra.Matrix

/-!
# RoPE: rotations, the block-diagonal operator, relative positions
(`[rope_group]`, `[rope_relative_position]`)

Paper/reference: RoPE rotates the query and key rows at position `n` by the
block-diagonal matrix `R_n` whose `2 × 2` blocks (planes of adjacent coordinates
`(2p, 2p+1)`) are `rot(n θ_p) = [[cos, -sin], [sin, cos]]`. The PLGA score between
positions `m` and `n` is `q R_mᵀ G R_n kᵀ`.

Abstraction. There are no real numbers or trigonometric functions in core Lean. An angle
is represented by its *unit pair* `(c, s) = (cos θ, sin θ)` with `c² + s² = 1`, and angle
addition by the complex multiplication of unit pairs
`(c, s)(c', s') = (cc' - ss', cs' + sc')` — exactly the addition formulas of cos and sin.
So `θ ↦ (cos θ, sin θ)` is a homomorphism from the angle group `(ℝ, +)` to unit pairs,
and the position-`n` rotation of plane `p` is the `n`-th power of the unit pair
`u_p = (cos θ_p, sin θ_p)`. The real RoPE operator is the instance
`ropeR (fun p => (cos θ_p, sin θ_p))`. Everything holds over any commutative ring.

* `[rope_group]` (`rope_group` and the `rope_group_*` lemmas): `rot` is multiplicative,
  sends `1` to `I`, `rot(u)ᵀ = rot(ū)` (the inverse angle), `rot(u)` is orthogonal with
  determinant `1` (so lies in SO(2)); the same for the block-diagonal `R_n`:
  `R_{m+n} = R_m R_n`, `R_0 = I`, `R_nᵀ R_n = R_n R_nᵀ = I`.
* `[rope_relative_position]`: for any orthogonal one-parameter family
  (`R_{m+n} = R_m R_n`, `R_nᵀ R_n = R_n R_nᵀ = I`), if `G` commutes with every `R_n` the
  score `q R_mᵀ G R_n kᵀ` depends on `(m, n)` only through `n - m` (sufficiency);
  conversely if it does, for all positions and all `q, k`, then `G` commutes with `R_1`,
  hence with every `R_n` (necessity). `rope_relative_position` states the equivalence for
  the RoPE operator.

There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

/-- A unit pair `(c, s)` with `c² + s² = 1`: the cosine and sine of an angle. -/
structure UnitPair (α : Type u) [CommRing α] where
  /-- The cosine. -/
  c : α
  /-- The sine. -/
  s : α
  /-- `c² + s² = 1`. -/
  norm : c * c + s * s = 1

variable {α : Type u} [CommRing α]

namespace UnitPair

/-- Unit pairs are equal when their coordinates are. -/
theorem ext {u v : UnitPair α} (hc : u.c = v.c) (hs : u.s = v.s) : u = v := by
  cases u; cases v; cases hc; cases hs; rfl

/-- Angle addition: `(c, s)(c', s') = (cc' - ss', cs' + sc')`. -/
@[expose] def mul (u v : UnitPair α) : UnitPair α where
  c := u.c * v.c - u.s * v.s
  s := u.c * v.s + u.s * v.c
  norm := by have := u.norm; have := v.norm; grind

/-- The zero angle `(1, 0)`. -/
@[expose] def one : UnitPair α where
  c := 1
  s := 0
  norm := by grind

/-- The opposite angle `(c, -s)`. -/
@[expose] def conj (u : UnitPair α) : UnitPair α where
  c := u.c
  s := -u.s
  norm := by have := u.norm; grind

/-- `n` times an angle. -/
@[expose] def pow (u : UnitPair α) : Nat → UnitPair α
  | 0 => one
  | n + 1 => mul (pow u n) u

/-- Angle addition is associative. -/
theorem mul_assoc (u v w : UnitPair α) : mul (mul u v) w = mul u (mul v w) :=
  ext (by simp only [mul]; grind) (by simp only [mul]; grind)

/-- The zero angle is neutral. -/
theorem mul_one (u : UnitPair α) : mul u one = u :=
  ext (by simp only [mul, one]; grind) (by simp only [mul, one]; grind)

/-- The opposite angle is an inverse. -/
theorem conj_mul (u : UnitPair α) : mul (conj u) u = one :=
  ext (by simp only [mul, conj, one]; have := u.norm; grind) (by simp only [mul, conj, one]; grind)

/-- `(m + n) θ = m θ + n θ`. -/
theorem pow_add (u : UnitPair α) (m : Nat) : ∀ n, pow u (m + n) = mul (pow u m) (pow u n)
  | 0 => (mul_one _).symm
  | n + 1 => by
    show mul (pow u (m + n)) u = mul (pow u m) (mul (pow u n) u)
    rw [pow_add u m n, mul_assoc]

/-- `1 θ = θ`. -/
theorem pow_one (u : UnitPair α) : pow u 1 = u :=
  ext (by simp only [pow, mul, one]; grind) (by simp only [pow, mul, one]; grind)

end UnitPair

/-! ### The `2 × 2` rotation -/

/-- The rotation matrix `rot(c, s) = [[c, -s], [s, c]]`. -/
@[expose] def rot (u : UnitPair α) : Mat α 2 2 := Mat.of2 u.c (-u.s) u.s u.c

/-- The quarter-turn `J = rot(0, 1) = [[0, -1], [1, 0]]`. -/
@[expose] def quarterTurn : Mat α 2 2 := Mat.of2 0 (-1) 1 0

/-- The determinant of a `2 × 2` matrix. -/
@[expose] def det2 (M : Mat α 2 2) : α := M 0 0 * M 1 1 - M 0 1 * M 1 0

/-- [rope_group] `rot(u) rot(v) = rot(u + v)`: rotation turns angle addition into the
matrix product. -/
theorem rope_group_rot_mul (u v : UnitPair α) : rot u ⬝ rot v = rot (u.mul v) := by
  simp only [rot, Mat.of2_mul_of2, UnitPair.mul]
  exact Mat.of2_eq_of2.mpr ⟨by grind, by grind, by grind, by grind⟩

/-- [rope_group] `rot(0) = I`. -/
theorem rope_group_rot_one : rot (UnitPair.one : UnitPair α) = 1 := by
  rw [Mat.one_eq_of2]
  simp only [rot, UnitPair.one]
  exact Mat.of2_eq_of2.mpr ⟨rfl, by grind, rfl, rfl⟩

/-- [rope_group] `rot(u)ᵀ = rot(-u)`. -/
theorem rope_group_rot_transpose (u : UnitPair α) : (rot u)ᵀ = rot u.conj := by
  simp only [rot, Mat.transpose_of2, UnitPair.conj]
  exact Mat.of2_eq_of2.mpr ⟨rfl, by grind, rfl, rfl⟩

/-- [rope_group] `rot(u)` is orthogonal: `rot(u)ᵀ rot(u) = I`. -/
theorem rope_group_rot_orthogonal (u : UnitPair α) : (rot u)ᵀ ⬝ rot u = 1 := by
  rw [rope_group_rot_transpose, rope_group_rot_mul, UnitPair.conj_mul, rope_group_rot_one]

/-- [rope_group] `rot(u) rot(u)ᵀ = I`. -/
theorem rope_group_rot_orthogonal' (u : UnitPair α) : rot u ⬝ (rot u)ᵀ = 1 := by
  have h := rope_group_rot_orthogonal u.conj
  rw [rope_group_rot_transpose] at h ⊢
  have hc : u.conj.conj = u := UnitPair.ext rfl (by simp only [UnitPair.conj]; grind)
  rw [hc] at h; exact h

/-- [rope_group] `det rot(u) = c² + s² = 1`: `rot(u) ∈ SO(2)`. -/
theorem rope_group_rot_det (u : UnitPair α) : det2 (rot u) = 1 := by
  simp only [det2, rot, Mat.of2]; have := u.norm; grind

/-! ### Block-diagonal matrices on `2k` coordinates -/

/-- The plane `⌊i/2⌋` of coordinate `i`. -/
@[expose] def planeOf {k : Nat} (i : Fin (2 * k)) : Fin k :=
  ⟨i.val / 2, by have := i.isLt; omega⟩

/-- The position `i mod 2` of coordinate `i` inside its plane. -/
@[expose] def coordOf {k : Nat} (i : Fin (2 * k)) : Fin 2 := ⟨i.val % 2, by omega⟩

/-- The plane of coordinate `2p + b` is `p`. -/
theorem planeOf_planeIdx {k : Nat} (p : Fin k) (b : Fin 2) : planeOf (planeIdx p b) = p :=
  Fin.ext (by simp only [planeOf, planeIdx]; have := b.isLt; omega)

/-- The in-plane position of coordinate `2p + b` is `b`. -/
theorem coordOf_planeIdx {k : Nat} (p : Fin k) (b : Fin 2) : coordOf (planeIdx p b) = b :=
  Fin.ext (by simp only [coordOf, planeIdx]; have := b.isLt; omega)

/-- Every coordinate is `2 ⌊i/2⌋ + (i mod 2)`. -/
theorem planeIdx_planeOf {k : Nat} (i : Fin (2 * k)) : planeIdx (planeOf i) (coordOf i) = i :=
  Fin.ext (by simp only [planeOf, coordOf, planeIdx]; omega)

/-- `planeIdx` is injective. -/
theorem planeIdx_inj {k : Nat} {p p' : Fin k} {b b' : Fin 2} :
    planeIdx p b = planeIdx p' b' ↔ p = p' ∧ b = b' := by
  constructor
  · intro h
    exact ⟨by rw [← planeOf_planeIdx p b, h, planeOf_planeIdx],
      by rw [← coordOf_planeIdx p b, h, coordOf_planeIdx]⟩
  · rintro ⟨rfl, rfl⟩; rfl

/-- Two `2k × 2k` matrices are equal when they agree on all pairs of plane coordinates. -/
theorem ext_planes {k : Nat} {M N : Mat α (2 * k) (2 * k)}
    (h : ∀ p p' b b', M (planeIdx p b) (planeIdx p' b') = N (planeIdx p b) (planeIdx p' b')) :
    M = N :=
  Mat.ext fun i j => by
    rw [← planeIdx_planeOf i, ← planeIdx_planeOf j]; exact h _ _ _ _

/-- The block-diagonal matrix with `2 × 2` blocks `B p` on the planes `(2p, 2p+1)`. -/
@[expose] def blockDiag {k : Nat} (B : Fin k → Mat α 2 2) : Mat α (2 * k) (2 * k) :=
  fun i j => if planeOf i = planeOf j then B (planeOf i) (coordOf i) (coordOf j) else 0

/-- The `(p, p')` block of a `2k × 2k` matrix. -/
@[expose] def block {k : Nat} (M : Mat α (2 * k) (2 * k)) (p p' : Fin k) : Mat α 2 2 :=
  fun b b' => M (planeIdx p b) (planeIdx p' b')

/-- Entries of a block-diagonal matrix in plane coordinates. -/
theorem blockDiag_planeIdx {k : Nat} (B : Fin k → Mat α 2 2) (p p' : Fin k) (b b' : Fin 2) :
    blockDiag B (planeIdx p b) (planeIdx p' b') = if p = p' then B p b b' else 0 := by
  simp only [blockDiag, planeOf_planeIdx, coordOf_planeIdx]

/-- Multiplying by a block-diagonal matrix on the right acts blockwise. -/
theorem mul_blockDiag_planeIdx {k : Nat} (M : Mat α (2 * k) (2 * k)) (B : Fin k → Mat α 2 2)
    (p p' : Fin k) (b b' : Fin 2) :
    (M ⬝ blockDiag B) (planeIdx p b) (planeIdx p' b') =
      finSum (fun c => M (planeIdx p b) (planeIdx p' c) * B p' c b') := by
  simp only [Mat.mul_apply]
  rw [finSum_planes]
  simp only [blockDiag_planeIdx]
  have h : (fun q : Fin k => M (planeIdx p b) (planeIdx q 0) * (if q = p' then B q 0 b' else 0) +
      M (planeIdx p b) (planeIdx q 1) * (if q = p' then B q 1 b' else 0)) =
      fun q => if q = p' then M (planeIdx p b) (planeIdx q 0) * B q 0 b' +
        M (planeIdx p b) (planeIdx q 1) * B q 1 b' else 0 :=
    funext fun q => by split <;> grind
  rw [h, finSum_ite_eq, finSum_two]

/-- Multiplying by a block-diagonal matrix on the left acts blockwise. -/
theorem blockDiag_mul_planeIdx {k : Nat} (B : Fin k → Mat α 2 2) (M : Mat α (2 * k) (2 * k))
    (p p' : Fin k) (b b' : Fin 2) :
    (blockDiag B ⬝ M) (planeIdx p b) (planeIdx p' b') =
      finSum (fun c => B p b c * M (planeIdx p c) (planeIdx p' b')) := by
  simp only [Mat.mul_apply]
  rw [finSum_planes]
  simp only [blockDiag_planeIdx]
  have h : (fun q : Fin k => (if p = q then B p b 0 else 0) * M (planeIdx q 0) (planeIdx p' b') +
      (if p = q then B p b 1 else 0) * M (planeIdx q 1) (planeIdx p' b')) =
      fun q => if p = q then B p b 0 * M (planeIdx q 0) (planeIdx p' b') +
        B p b 1 * M (planeIdx q 1) (planeIdx p' b') else 0 :=
    funext fun q => by split <;> grind
  rw [h, finSum_ite_eq', finSum_two]

/-- Blocks of `M ⬝ blockDiag B`. -/
theorem block_mul_blockDiag {k : Nat} (M : Mat α (2 * k) (2 * k)) (B : Fin k → Mat α 2 2)
    (p p' : Fin k) : block (M ⬝ blockDiag B) p p' = block M p p' ⬝ B p' :=
  Mat.ext fun b b' => by simp only [block]; rw [mul_blockDiag_planeIdx]; rfl

/-- Blocks of `blockDiag B ⬝ M`. -/
theorem block_blockDiag_mul {k : Nat} (B : Fin k → Mat α 2 2) (M : Mat α (2 * k) (2 * k))
    (p p' : Fin k) : block (blockDiag B ⬝ M) p p' = B p ⬝ block M p p' :=
  Mat.ext fun b b' => by simp only [block]; rw [blockDiag_mul_planeIdx]; rfl

/-- The product of block-diagonal matrices is block-diagonal, blockwise. -/
theorem blockDiag_mul_blockDiag {k : Nat} (B C : Fin k → Mat α 2 2) :
    blockDiag B ⬝ blockDiag C = blockDiag (fun p => B p ⬝ C p) :=
  ext_planes fun p p' b b' => by
    rw [mul_blockDiag_planeIdx]
    simp only [blockDiag_planeIdx]
    by_cases h : p = p'
    · subst h; simp [Mat.mul_apply]
    · simp only [h, if_false]
      exact finSum_eq_zero fun c => by grind

/-- The transpose of a block-diagonal matrix is block-diagonal, blockwise. -/
theorem blockDiag_transpose {k : Nat} (B : Fin k → Mat α 2 2) :
    (blockDiag B)ᵀ = blockDiag (fun p => (B p)ᵀ) :=
  ext_planes fun p p' b b' => by
    simp only [Mat.transpose_apply, blockDiag_planeIdx]
    by_cases h : p = p'
    · subst h; simp
    · have h' : ¬ p' = p := fun e => h e.symm
      simp [h, h']

/-- The identity is block-diagonal with identity blocks. -/
theorem blockDiag_one {k : Nat} : blockDiag (fun _ : Fin k => (1 : Mat α 2 2)) = 1 :=
  ext_planes fun p p' b b' => by
    simp only [blockDiag_planeIdx, Mat.one_apply, planeIdx_inj]
    by_cases h : p = p'
    · subst h; simp
    · simp [h]

/-! ### The RoPE operator -/

/-- The RoPE operator at position `n`: block-diagonal with blocks `rot(n θ_p)`, where the
plane angles are given by unit pairs `u p = (cos θ_p, sin θ_p)`. -/
@[expose] def ropeR {k : Nat} (u : Fin k → UnitPair α) (n : Nat) : Mat α (2 * k) (2 * k) :=
  blockDiag (fun p => rot ((u p).pow n))

/-- [rope_group] The block-diagonal RoPE operator is a homomorphism from positions to
orthogonal matrices: `R_{m+n} = R_m R_n`, `R_0 = I`, `R_nᵀ R_n = I` and `R_n R_nᵀ = I`. -/
theorem rope_group {k : Nat} (u : Fin k → UnitPair α) :
    (∀ m n, ropeR u (m + n) = ropeR u m ⬝ ropeR u n) ∧ ropeR u 0 = 1 ∧
      (∀ n, (ropeR u n)ᵀ ⬝ ropeR u n = 1) ∧ (∀ n, ropeR u n ⬝ (ropeR u n)ᵀ = 1) := by
  refine ⟨fun m n => ?_, ?_, fun n => ?_, fun n => ?_⟩
  · simp only [ropeR, blockDiag_mul_blockDiag, rope_group_rot_mul, UnitPair.pow_add]
  · simp only [ropeR, UnitPair.pow, rope_group_rot_one, blockDiag_one]
  · simp only [ropeR, blockDiag_transpose, blockDiag_mul_blockDiag, rope_group_rot_orthogonal,
      blockDiag_one]
  · simp only [ropeR, blockDiag_transpose, blockDiag_mul_blockDiag, rope_group_rot_orthogonal',
      blockDiag_one]

/-- [rope_group] The position-1 RoPE operator is the block-diagonal matrix of the plane
rotations themselves. -/
theorem rope_group_one {k : Nat} (u : Fin k → UnitPair α) :
    ropeR u 1 = blockDiag (fun p => rot (u p)) := by
  simp only [ropeR, UnitPair.pow_one]

/-! ### Relative positions -/

/-- The score `q R_mᵀ G R_n kᵀ` between a query `q` at position `m` and a key `k` at
position `n`, for a family of position operators `R`. -/
@[expose] def relScore {d : Nat} (R : Nat → Mat α d d) (G : Mat α d d) (q k : Mat α 1 d)
    (m n : Nat) : α :=
  (q ⬝ ((R m)ᵀ ⬝ G ⬝ R n) ⬝ kᵀ) 0 0

/-- Shifting both positions by `t` does not change `R_mᵀ G R_n` when `G` commutes with
`R_t`. -/
theorem conj_shift {d : Nat} {R : Nat → Mat α d d} (hmul : ∀ m n, R (m + n) = R m ⬝ R n)
    (hT : ∀ n, (R n)ᵀ ⬝ R n = 1) {G : Mat α d d} (hG : ∀ n, G ⬝ R n = R n ⬝ G)
    (m n t : Nat) : (R (m + t))ᵀ ⬝ G ⬝ R (n + t) = (R m)ᵀ ⬝ G ⬝ R n := by
  rw [Nat.add_comm m t, Nat.add_comm n t, hmul t m, hmul t n, Mat.transpose_mul]
  have hc := Mat.conj_eq_of_commute (hT t) (hG t)
  calc (R m)ᵀ ⬝ (R t)ᵀ ⬝ G ⬝ (R t ⬝ R n) = (R m)ᵀ ⬝ ((R t)ᵀ ⬝ G ⬝ R t) ⬝ R n := by
        simp only [Mat.mul_assoc]
    _ = (R m)ᵀ ⬝ G ⬝ R n := by rw [hc]

/-- [rope_relative_position] Sufficiency, for any orthogonal one-parameter family
`R_{m+n} = R_m R_n`, `R_nᵀ R_n = I`: if `G` commutes with every `R_n`, the score
`q R_mᵀ G R_n kᵀ` depends on `(m, n)` only through `n - m`. -/
theorem rope_relative_position_sufficiency {d : Nat} {R : Nat → Mat α d d}
    (hmul : ∀ m n, R (m + n) = R m ⬝ R n) (hT : ∀ n, (R n)ᵀ ⬝ R n = 1) {G : Mat α d d}
    (hG : ∀ n, G ⬝ R n = R n ⬝ G) (q k : Mat α 1 d) (m n m' n' : Nat)
    (h : (n : Int) - m = (n' : Int) - m') : relScore R G q k m n = relScore R G q k m' n' := by
  simp only [relScore]
  rcases Nat.le_total m m' with hm | hm
  · have e1 : m' = m + (m' - m) := by omega
    have e2 : n' = n + (m' - m) := by omega
    rw [e1, e2, conj_shift hmul hT hG]
  · have e1 : m = m' + (m - m') := by omega
    have e2 : n = n' + (m - m') := by omega
    rw [e1, e2, conj_shift hmul hT hG]

/-- A matrix commuting with `R_1` commutes with every `R_n = R_1ⁿ`. -/
theorem commute_all_of_commute_one {d : Nat} {R : Nat → Mat α d d}
    (hmul : ∀ m n, R (m + n) = R m ⬝ R n) (h0 : R 0 = 1) {G : Mat α d d}
    (h1 : G ⬝ R 1 = R 1 ⬝ G) : ∀ n, G ⬝ R n = R n ⬝ G
  | 0 => by rw [h0, Mat.mul_one, Mat.one_mul]
  | n + 1 => by
    rw [hmul n 1, ← Mat.mul_assoc, commute_all_of_commute_one hmul h0 h1 n, Mat.mul_assoc, h1,
      ← Mat.mul_assoc]

/-- An orthogonal family with `R_{m+n} = R_m R_n` has `R_0 = I`. -/
theorem family_zero {d : Nat} {R : Nat → Mat α d d} (hmul : ∀ m n, R (m + n) = R m ⬝ R n)
    (hT : ∀ n, (R n)ᵀ ⬝ R n = 1) : R 0 = 1 := by
  have h := hmul 0 0
  calc R 0 = (R 0)ᵀ ⬝ R 0 ⬝ R 0 := by rw [hT, Mat.one_mul]
    _ = (R 0)ᵀ ⬝ R 0 := by rw [Mat.mul_assoc, ← h]
    _ = 1 := hT 0

/-- [rope_relative_position] Necessity, for any orthogonal one-parameter family: if the
score `q R_mᵀ G R_n kᵀ` depends only on `n - m` (for all positions and all `q`, `k`),
then `G` commutes with `R_1`, hence with every `R_n`. -/
theorem rope_relative_position_necessity {d : Nat} {R : Nat → Mat α d d}
    (hmul : ∀ m n, R (m + n) = R m ⬝ R n) (hT : ∀ n, (R n)ᵀ ⬝ R n = 1)
    (hT' : ∀ n, R n ⬝ (R n)ᵀ = 1) {G : Mat α d d}
    (h : ∀ (q k : Mat α 1 d) (m n m' n' : Nat), (n : Int) - m = (n' : Int) - m' →
      relScore R G q k m n = relScore R G q k m' n') :
    ∀ n, G ⬝ R n = R n ⬝ G := by
  have h0 := family_zero hmul hT
  have hconj : (R 1)ᵀ ⬝ G ⬝ R 1 = G := by
    have e : (R 1)ᵀ ⬝ G ⬝ R 1 = (R 0)ᵀ ⬝ G ⬝ R 0 :=
      Mat.eq_of_bilinear_eq fun x y => h x y 1 1 0 0 (by omega)
    rw [e, h0, Mat.transpose_one, Mat.one_mul, Mat.mul_one]
  exact commute_all_of_commute_one hmul h0 (Mat.commute_of_conj_eq (hT' 1) hconj)

/-- [rope_relative_position] For the RoPE operator (any plane angles): `G` commutes with
every `R_n` if and only if every score `q R_mᵀ G R_n kᵀ` depends on the positions only
through `n - m`. -/
theorem rope_relative_position {k : Nat} (u : Fin k → UnitPair α) (G : Mat α (2 * k) (2 * k)) :
    (∀ n, G ⬝ ropeR u n = ropeR u n ⬝ G) ↔
      ∀ (q k' : Mat α 1 (2 * k)) (m n m' n' : Nat), (n : Int) - m = (n' : Int) - m' →
        relScore (ropeR u) G q k' m n = relScore (ropeR u) G q k' m' n' := by
  obtain ⟨hmul, _, hT, hT'⟩ := rope_group u
  exact ⟨fun hG q k' m n m' n' h => rope_relative_position_sufficiency hmul hT hG q k' m n m' n' h,
    fun h => rope_relative_position_necessity hmul hT hT' h⟩

/-- [rope_relative_position] Necessity in the spec's form: relative scores force `G` to
commute with `R_1`. -/
theorem rope_relative_position_commute_one {k : Nat} (u : Fin k → UnitPair α)
    (G : Mat α (2 * k) (2 * k))
    (h : ∀ (q k' : Mat α 1 (2 * k)) (m n m' n' : Nat), (n : Int) - m = (n' : Int) - m' →
      relScore (ropeR u) G q k' m n = relScore (ropeR u) G q k' m' n') :
    G ⬝ ropeR u 1 = ropeR u 1 ⬝ G :=
  (rope_relative_position u G).mpr h 1

end Pldr

end

module

public import Pldr.Algebra.Sum

/-!
# Matrices over a commutative ring

`Pldr.Mat α m n` is the type of `m × n` matrices, i.e. functions `Fin m → Fin n → α`,
over a commutative ring `α` (`Lean.Grind.CommRing`). This file defines the product
`A ⬝ B`, the transpose `Aᵀ`, the identity `1`, sums, differences and scalar multiples, and
proves the algebra the rest of the library uses: associativity of the product, identity
laws, distributivity, transpose of a product, and the elementary facts about orthogonal
matrices and commuting matrices that RoPE needs. It also provides explicit `2 × 2`
matrices `Mat.of2 a b c d` and unit row vectors `Mat.unitRow i`.

The notations `A ⬝ B` and `Aᵀ` are declared `local` in every file that uses them
(exported notation cannot cross module boundaries in the WebAssembly Lean build).

Row vectors are `1 × n` matrices, so that the paper's `q R_mᵀ G R_n kᵀ` is literally the
`(0, 0)` entry of a product of matrices.

Everything is proved from the ring laws; there are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

/-- `m × n` matrices with entries in `α`: functions from row and column indices. -/
@[expose] def Mat (α : Type u) (m n : Nat) : Type u := Fin m → Fin n → α

namespace Mat

variable {α : Type u} [CommRing α] {m n p q : Nat}

/-- Two matrices are equal when all their entries are. -/
theorem ext {A B : Mat α m n} (h : ∀ i j, A i j = B i j) : A = B :=
  funext fun i => funext fun j => h i j

/-- The matrix product `(A ⬝ B) i k = finSum fun j => A i j * B j k`. -/
@[expose] def mul (A : Mat α m n) (B : Mat α n p) : Mat α m p :=
  fun i k => finSum fun j => A i j * B j k

/-- The transpose `Aᵀ i j = A j i`. -/
@[expose] def transpose (A : Mat α m n) : Mat α n m := fun i j => A j i

/-- The identity matrix. -/
@[expose] def one : Mat α n n := fun i j => if i = j then 1 else 0

/-- The zero matrix. -/
@[expose] def zero : Mat α m n := fun _ _ => 0

/-- Entrywise sum. -/
@[expose] def add (A B : Mat α m n) : Mat α m n := fun i j => A i j + B i j

/-- Entrywise difference. -/
@[expose] def sub (A B : Mat α m n) : Mat α m n := fun i j => A i j - B i j

/-- Scalar multiple. -/
@[expose] def smul (c : α) (A : Mat α m n) : Mat α m n := fun i j => c * A i j

@[inherit_doc] local infixl:75 " ⬝ " => Mat.mul
@[inherit_doc] local postfix:max "ᵀ" => Mat.transpose

instance : OfNat (Mat α n n) 1 := ⟨one⟩
instance : OfNat (Mat α m n) 0 := ⟨zero⟩
instance : Add (Mat α m n) := ⟨add⟩
instance : Sub (Mat α m n) := ⟨sub⟩
instance : HSMul α (Mat α m n) (Mat α m n) := ⟨smul⟩

/-- Entries of a product. -/
@[simp] theorem mul_apply (A : Mat α m n) (B : Mat α n p) (i : Fin m) (k : Fin p) :
    (A ⬝ B) i k = finSum fun j => A i j * B j k := rfl
/-- Entries of a transpose. -/
@[simp] theorem transpose_apply (A : Mat α m n) (i : Fin n) (j : Fin m) : Aᵀ i j = A j i := rfl

/-- Entries of the identity. -/
@[simp] theorem one_apply (i j : Fin n) : (1 : Mat α n n) i j = if i = j then 1 else 0 := rfl
/-- Entries of the zero matrix. -/
@[simp] theorem zero_apply (i : Fin m) (j : Fin n) : (0 : Mat α m n) i j = 0 := rfl
/-- Entries of a sum. -/
@[simp] theorem add_apply (A B : Mat α m n) (i : Fin m) (j : Fin n) :
    (A + B) i j = A i j + B i j := rfl
/-- Entries of a difference. -/
@[simp] theorem sub_apply (A B : Mat α m n) (i : Fin m) (j : Fin n) :
    (A - B) i j = A i j - B i j := rfl
/-- Entries of a scalar multiple. -/
@[simp] theorem smul_apply (c : α) (A : Mat α m n) (i : Fin m) (j : Fin n) :
    (c • A) i j = c * A i j := rfl

/-- The matrix product is associative. -/
theorem mul_assoc (A : Mat α m n) (B : Mat α n p) (C : Mat α p q) :
    A ⬝ B ⬝ C = A ⬝ (B ⬝ C) := by
  apply ext; intro i l
  simp only [mul_apply, finSum_mul, mul_finSum]
  refine (finSum_comm _).trans ?_
  congr 1; funext j; congr 1; funext k; grind

/-- The identity is a right unit. -/
@[simp] theorem mul_one (A : Mat α m n) : A ⬝ (1 : Mat α n n) = A := by
  apply ext; intro i k
  simp only [mul_apply, one_apply]
  have h : (fun j => A i j * (if j = k then 1 else 0)) = fun j => if j = k then A i j else 0 :=
    funext fun j => by split <;> grind
  rw [h, finSum_ite_eq]

/-- The identity is a left unit. -/
@[simp] theorem one_mul (A : Mat α m n) : (1 : Mat α m m) ⬝ A = A := by
  apply ext; intro i k
  simp only [mul_apply, one_apply]
  have h : (fun j => (if i = j then 1 else 0) * A j k) = fun j => if i = j then A j k else 0 :=
    funext fun j => by split <;> grind
  rw [h, finSum_ite_eq']

/-- Left distributivity. -/
theorem mul_add (A : Mat α m n) (B C : Mat α n p) : A ⬝ (B + C) = A ⬝ B + A ⬝ C := by
  apply ext; intro i k
  simp only [mul_apply, add_apply, ← finSum_add]
  congr 1; funext j; grind

/-- Right distributivity. -/
theorem add_mul (A B : Mat α m n) (C : Mat α n p) : (A + B) ⬝ C = A ⬝ C + B ⬝ C := by
  apply ext; intro i k
  simp only [mul_apply, add_apply, ← finSum_add]
  congr 1; funext j; grind

/-- Left distributivity over differences. -/
theorem mul_sub (A : Mat α m n) (B C : Mat α n p) : A ⬝ (B - C) = A ⬝ B - A ⬝ C := by
  apply ext; intro i k
  simp only [mul_apply, sub_apply, ← finSum_sub]
  congr 1; funext j; grind

/-- Right distributivity over differences. -/
theorem sub_mul (A B : Mat α m n) (C : Mat α n p) : (A - B) ⬝ C = A ⬝ C - B ⬝ C := by
  apply ext; intro i k
  simp only [mul_apply, sub_apply, ← finSum_sub]
  congr 1; funext j; grind

/-- Scalars move out of the left factor. -/
theorem smul_mul (c : α) (A : Mat α m n) (B : Mat α n p) : (c • A) ⬝ B = c • (A ⬝ B) := by
  apply ext; intro i k
  simp only [mul_apply, smul_apply, mul_finSum]
  congr 1; funext j; grind

/-- Scalars move out of the right factor. -/
theorem mul_smul (c : α) (A : Mat α m n) (B : Mat α n p) : A ⬝ (c • B) = c • (A ⬝ B) := by
  apply ext; intro i k
  simp only [mul_apply, smul_apply, mul_finSum]
  congr 1; funext j; grind

/-- The zero matrix is absorbing on the left. -/
@[simp] theorem zero_mul (A : Mat α n p) : (0 : Mat α m n) ⬝ A = 0 := by
  apply ext; intro i k
  simp only [mul_apply, zero_apply]
  exact finSum_eq_zero fun j => by grind

/-- `0 + A = A`. -/
@[simp] theorem zero_add (A : Mat α m n) : (0 : Mat α m n) + A = A := by
  apply ext; intro i j; simp only [add_apply, zero_apply]; grind

/-- Transposing twice does nothing. -/
@[simp] theorem transpose_transpose (A : Mat α m n) : Aᵀᵀ = A := rfl

/-- The identity is symmetric. -/
@[simp] theorem transpose_one : (1 : Mat α n n)ᵀ = 1 := by
  apply ext; intro i j
  simp only [transpose_apply, one_apply]
  by_cases h : i = j
  · subst h; simp
  · have h' : ¬ j = i := fun e => h e.symm
    simp [h, h']

/-- The transpose of a product is the product of the transposes in reverse order. -/
theorem transpose_mul (A : Mat α m n) (B : Mat α n p) : (A ⬝ B)ᵀ = Bᵀ ⬝ Aᵀ := by
  apply ext; intro k i
  simp only [transpose_apply, mul_apply]
  congr 1; funext j; grind

/-- Transpose of a sum. -/
theorem transpose_add (A B : Mat α m n) : (A + B)ᵀ = Aᵀ + Bᵀ := rfl

/-! ### Orthogonal and commuting matrices -/

/-- A matrix commuting with an orthogonal matrix `R` (`R Rᵀ = Rᵀ R = 1`) also commutes with
`Rᵀ = R⁻¹`. -/
theorem commute_transpose_of_orthogonal {G R : Mat α n n}
    (h1 : R ⬝ Rᵀ = 1) (h2 : Rᵀ ⬝ R = 1) (hc : G ⬝ R = R ⬝ G) : G ⬝ Rᵀ = Rᵀ ⬝ G := by
  calc G ⬝ Rᵀ = (Rᵀ ⬝ R) ⬝ G ⬝ Rᵀ := by rw [h2, one_mul]
    _ = Rᵀ ⬝ (R ⬝ G) ⬝ Rᵀ := by rw [mul_assoc Rᵀ R G]
    _ = Rᵀ ⬝ (G ⬝ R) ⬝ Rᵀ := by rw [hc]
    _ = Rᵀ ⬝ G ⬝ (R ⬝ Rᵀ) := by rw [← mul_assoc Rᵀ G R, mul_assoc _ R Rᵀ]
    _ = Rᵀ ⬝ G := by rw [h1, mul_one]

/-- Conjugating by an orthogonal matrix that commutes with `G` leaves `G` unchanged:
`Rᵀ G R = G`. -/
theorem conj_eq_of_commute {G R : Mat α n n} (h2 : Rᵀ ⬝ R = 1) (hc : G ⬝ R = R ⬝ G) :
    Rᵀ ⬝ G ⬝ R = G := by
  rw [mul_assoc, hc, ← mul_assoc, h2, one_mul]

/-- Conversely, if `Rᵀ G R = G` for an orthogonal `R` (`R Rᵀ = 1`), then `G` commutes
with `R`. -/
theorem commute_of_conj_eq {G R : Mat α n n} (h1 : R ⬝ Rᵀ = 1) (h : Rᵀ ⬝ G ⬝ R = G) :
    G ⬝ R = R ⬝ G := by
  calc G ⬝ R = (R ⬝ Rᵀ) ⬝ G ⬝ R := by rw [h1, one_mul]
    _ = R ⬝ (Rᵀ ⬝ G ⬝ R) := by rw [mul_assoc R Rᵀ G, mul_assoc R (Rᵀ ⬝ G) R]
    _ = R ⬝ G := by rw [h]

/-! ### Unit row vectors -/

/-- The `i`-th unit row vector `e_i` (a `1 × n` matrix). -/
@[expose] def unitRow (i : Fin n) : Mat α 1 n := fun _ j => if i = j then 1 else 0

/-- `e_i M e_jᵀ` is the entry `M i j`. -/
theorem unitRow_mul_mul_unitRow (M : Mat α n n) (i j : Fin n) :
    (unitRow i ⬝ M ⬝ (unitRow j)ᵀ) 0 0 = M i j := by
  simp only [mul_apply, transpose_apply, unitRow]
  have h1 : ∀ k, finSum (fun l : Fin n => (if i = l then (1 : α) else 0) * M l k) = M i k :=
    fun k => by
      have : (fun l : Fin n => (if i = l then (1 : α) else 0) * M l k) =
          fun l => if i = l then M l k else 0 := funext fun l => by split <;> grind
      rw [this, finSum_ite_eq']
  simp only [h1]
  have : (fun k : Fin n => M i k * (if j = k then (1 : α) else 0)) =
      fun k => if j = k then M i k else 0 := funext fun k => by split <;> grind
  rw [this, finSum_ite_eq']

/-- Two `n × n` matrices agree as soon as all their bilinear forms `q M kᵀ` agree. -/
theorem eq_of_bilinear_eq {M N : Mat α n n}
    (h : ∀ x y : Mat α 1 n, (x ⬝ M ⬝ yᵀ) 0 0 = (x ⬝ N ⬝ yᵀ) 0 0) : M = N :=
  ext fun i j => by
    rw [← unitRow_mul_mul_unitRow M i j, ← unitRow_mul_mul_unitRow N i j]
    exact h _ _

/-! ### Explicit `2 × 2` matrices -/

/-- The `2 × 2` matrix `[[a, b], [c, d]]`. -/
@[expose] def of2 (a b c d : α) : Mat α 2 2 :=
  fun i j => if i = 0 then (if j = 0 then a else b) else (if j = 0 then c else d)

/-- Every `2 × 2` matrix is `of2` of its entries. -/
theorem eq_of2 (M : Mat α 2 2) : M = of2 (M 0 0) (M 0 1) (M 1 0) (M 1 1) :=
  ext fun i j => by
    have hi : i = 0 ∨ i = 1 := by revert i; decide
    have hj : j = 0 ∨ j = 1 := by revert j; decide
    rcases hi with rfl | rfl <;> rcases hj with rfl | rfl <;> rfl

/-- Two explicit `2 × 2` matrices are equal iff their four entries are. -/
theorem of2_eq_of2 {a b c d a' b' c' d' : α} :
    of2 a b c d = of2 a' b' c' d' ↔ a = a' ∧ b = b' ∧ c = c' ∧ d = d' := by
  constructor
  · intro h
    exact ⟨congrFun (congrFun h 0) 0, congrFun (congrFun h 0) 1,
      congrFun (congrFun h 1) 0, congrFun (congrFun h 1) 1⟩
  · rintro ⟨rfl, rfl, rfl, rfl⟩; rfl

/-- The product of two explicit `2 × 2` matrices. -/
theorem of2_mul_of2 (a b c d a' b' c' d' : α) :
    of2 a b c d ⬝ of2 a' b' c' d' =
      of2 (a * a' + b * c') (a * b' + b * d') (c * a' + d * c') (c * b' + d * d') := by
  apply ext; intro i j
  simp only [mul_apply, finSum_two]
  have hi : i = 0 ∨ i = 1 := by revert i; decide
  have hj : j = 0 ∨ j = 1 := by revert j; decide
  rcases hi with rfl | rfl <;> rcases hj with rfl | rfl <;> rfl

/-- The transpose of an explicit `2 × 2` matrix. -/
theorem transpose_of2 (a b c d : α) : (of2 a b c d)ᵀ = of2 a c b d := by
  apply ext; intro i j
  have hi : i = 0 ∨ i = 1 := by revert i; decide
  have hj : j = 0 ∨ j = 1 := by revert j; decide
  rcases hi with rfl | rfl <;> rcases hj with rfl | rfl <;> rfl

/-- The `2 × 2` identity. -/
theorem one_eq_of2 : (1 : Mat α 2 2) = of2 1 0 0 1 := by
  apply ext; intro i j
  have hi : i = 0 ∨ i = 1 := by revert i; decide
  have hj : j = 0 ∨ j = 1 := by revert j; decide
  rcases hi with rfl | rfl <;> rcases hj with rfl | rfl <;> rfl

/-- The `2 × 2` zero matrix. -/
theorem zero_eq_of2 : (0 : Mat α 2 2) = of2 0 0 0 0 := by
  apply ext; intro i j
  have hi : i = 0 ∨ i = 1 := by revert i; decide
  have hj : j = 0 ∨ j = 1 := by revert j; decide
  rcases hi with rfl | rfl <;> rcases hj with rfl | rfl <;> rfl

end Mat

end Pldr

end

module

public import Cheats.Lemma

/-! Lexically clean: the cheat is only visible in the compiled constants. -/

public section
namespace Cheats

theorem c_indirect : 2 = 3 := by
  have h := lemma_from_axiom
  omega

end Cheats
end

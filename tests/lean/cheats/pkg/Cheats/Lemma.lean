module

/-! An axiom hidden behind a lemma, for `Cheats.Indirect` to use. -/

public section
namespace Cheats

axiom hidden_fact : 1 = 2

theorem lemma_from_axiom : 1 = 2 := hidden_fact

end Cheats
end

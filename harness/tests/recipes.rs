//! Every recipe gives the answer it promises, on a fresh broker-under-test each.

#[test]
fn every_recipe_keeps_its_promise() {
    for recipe in harness::recipe::RECIPES {
        let check = harness::recipe::run(recipe, None)
            .unwrap_or_else(|e| panic!("recipe {}: {e:#}", recipe.name));
        assert!(
            check.kept,
            "recipe {} broke its promise ({}): {} — answers {:?}",
            recipe.name,
            recipe.promise,
            check.detail,
            check.answers.iter().take(12).collect::<Vec<_>>()
        );
    }
}

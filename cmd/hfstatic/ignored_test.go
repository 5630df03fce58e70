package main

import "testing"

func TestIgnoredGroupsCountsByFirstComponent(t *testing.T) {
	got := ignoredGroups([]string{
		"multi_modal_projector.mm_input_projection_weight", "multi_modal_projector.mm_soft_emb_norm.weight",
		"vision_tower.vision_model.embeddings.patch_embedding.weight", "vision_tower.vision_model.post_layernorm.bias",
		"vision_tower.vision_model.post_layernorm.weight",
	})
	if want := "multi_modal_projector.* (2), vision_tower.* (3)"; got != want {
		t.Errorf("ignoredGroups = %q, want %q", got, want)
	}
}

package decoder

import (
	"fmt"
	"math"
)

// RopeScaling is the rope_scaling object of a Hugging Face config (fields for every type).
type RopeScaling struct {
	RopeType                      string   `json:"rope_type"`
	Type                          string   `json:"type"` // older spelling of rope_type
	Factor                        float64  `json:"factor"`
	LowFreqFactor                 float64  `json:"low_freq_factor"`
	HighFreqFactor                float64  `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int      `json:"original_max_position_embeddings"`
	AttentionFactor               *float64 `json:"attention_factor"`
	BetaFast                      *float64 `json:"beta_fast"`
	BetaSlow                      *float64 `json:"beta_slow"`
	// ShortFactor and LongFactor divide the frequencies of longrope (Phi-3), one per
	// frequency: short up to original_max_position_embeddings, long beyond.
	ShortFactor []float64 `json:"short_factor"`
	LongFactor  []float64 `json:"long_factor"`
}

// RopeParameters is one rope_parameters object of transformers v5 configs, which replaced
// rope_theta and rope_scaling: the base and the scaling fields together.
type RopeParameters struct {
	RopeScaling
	RopeTheta *float64 `json:"rope_theta"`
}

// kindField is the JSON path of the scaling type as the config spells it.
func (r *RopeScaling) kindField() string {
	if r != nil && r.RopeType == "" && r.Type != "" {
		return "rope_scaling.type"
	}
	return "rope_scaling.rope_type"
}

// Kind is the scaling type ("default" when none).
func (r *RopeScaling) Kind() string {
	if r == nil {
		return "default"
	}
	if r.RopeType != "" {
		return r.RopeType
	}
	if r.Type != "" {
		return r.Type
	}
	return "default"
}

// NewRoPE computes inverse frequencies for rotary dimension dim (head_dim, or its rotated
// part), base theta and an optional scaling (default, linear, llama3, yarn, longrope).
// maxPos is the config's max_position_embeddings. A config error is a *FieldError naming
// the field (its Class left for the caller).
func NewRoPE(dim int, theta float64, scaling *RopeScaling, maxPos int) (RoPE, error) {
	if theta <= 0 {
		return RoPE{}, fmt.Errorf("rope_theta %g must be > 0", theta)
	}
	half := dim / 2
	inv := make([]float64, half)
	for j := range inv {
		// float32 as in HF: 1 / theta^(2j/dim)
		inv[j] = float64(float32(1 / math.Pow(theta, float64(2*j)/float64(dim))))
	}
	r := RoPE{InvFreq: inv, AttentionFactor: 1}
	kind := scaling.Kind()
	switch kind {
	case "default":
		return r, nil
	case "linear":
		if scaling.Factor <= 0 {
			return RoPE{}, fmt.Errorf("rope_scaling linear: factor %g must be > 0", scaling.Factor)
		}
		for j := range inv {
			inv[j] /= scaling.Factor
		}
		return r, nil
	case "llama3":
		s := scaling
		if s.Factor <= 0 || s.LowFreqFactor <= 0 || s.HighFreqFactor <= s.LowFreqFactor || s.OriginalMaxPositionEmbeddings <= 0 {
			return RoPE{}, fmt.Errorf("rope_scaling llama3: need factor > 0, 0 < low_freq_factor < high_freq_factor, original_max_position_embeddings > 0")
		}
		old := float64(s.OriginalMaxPositionEmbeddings)
		lowWave, highWave := old/s.LowFreqFactor, old/s.HighFreqFactor
		for j, f := range inv {
			wave := 2 * math.Pi / f
			switch {
			case wave < highWave:
			case wave > lowWave:
				inv[j] = f / s.Factor
			default:
				smooth := (old/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				inv[j] = (1-smooth)*f/s.Factor + smooth*f
			}
		}
		return r, nil
	case "yarn":
		s := scaling
		if s.Factor <= 0 {
			return RoPE{}, fmt.Errorf("rope_scaling yarn: factor %g must be > 0", s.Factor)
		}
		orig := float64(s.OriginalMaxPositionEmbeddings)
		if orig <= 0 {
			orig = float64(maxPos)
		}
		betaFast, betaSlow := 32.0, 1.0
		if s.BetaFast != nil {
			betaFast = *s.BetaFast
		}
		if s.BetaSlow != nil {
			betaSlow = *s.BetaSlow
		}
		corr := func(rot float64) float64 {
			return float64(dim) * math.Log(orig/(rot*2*math.Pi)) / (2 * math.Log(theta))
		}
		low := math.Max(math.Floor(corr(betaFast)), 0)
		high := math.Min(math.Ceil(corr(betaSlow)), float64(dim-1))
		if low == high {
			high += 0.001
		}
		for j, f := range inv {
			ramp := math.Min(math.Max((float64(j)-low)/(high-low), 0), 1)
			extrap := 1 - ramp
			inv[j] = f/s.Factor*(1-extrap) + f*extrap
		}
		r.AttentionFactor = 0.1*math.Log(s.Factor) + 1
		if s.Factor <= 1 {
			r.AttentionFactor = 1
		}
		if s.AttentionFactor != nil {
			r.AttentionFactor = *s.AttentionFactor
		}
		return r, nil
	case "longrope":
		return longRoPE(r, dim, theta, scaling, maxPos)
	}
	return RoPE{}, &FieldError{Field: scaling.kindField(),
		Problem: fmt.Sprintf("%q is not supported (supported: default, linear, llama3, yarn, longrope)", kind)}
}

// longRoPE is transformers' longrope (_compute_longrope_parameters): the frequencies
// divided by short_factor, or by long_factor in programs whose context exceeds
// original_max_position_embeddings (transformers switches when the sequence outgrows it;
// a static program's context fixes the choice at export, as llama.cpp's n_ctx does), and
// cos and sin multiplied by sqrt(1 + ln(factor)/ln(original)), factor being
// max_position_embeddings/original (rope_scaling.factor when no original is given) unless
// rope_scaling.attention_factor is set. r holds the unscaled frequencies.
func longRoPE(r RoPE, dim int, theta float64, s *RopeScaling, maxPos int) (RoPE, error) {
	for _, f := range []struct {
		field string
		v     []float64
	}{{"rope_scaling.short_factor", s.ShortFactor}, {"rope_scaling.long_factor", s.LongFactor}} {
		if len(f.v) != dim/2 {
			return RoPE{}, &FieldError{Field: f.field,
				Problem: fmt.Sprintf("has %d entries, want %d (one per rotary frequency: head_dim × partial_rotary_factor / 2)", len(f.v), dim/2)}
		}
		for i, x := range f.v {
			if !(x > 0) {
				return RoPE{}, &FieldError{Field: fmt.Sprintf("%s[%d]", f.field, i), Problem: fmt.Sprintf("= %g, must be > 0", x)}
			}
		}
	}
	orig, factor := s.OriginalMaxPositionEmbeddings, s.Factor
	if orig > 0 {
		factor = float64(maxPos) / float64(orig)
	} else {
		orig = maxPos
	}
	if orig <= 0 {
		return RoPE{}, &FieldError{Field: "original_max_position_embeddings", Problem: fmt.Sprintf("= %d, must be > 0", orig)}
	}
	r.AttentionFactor = 1
	if factor > 1 {
		r.AttentionFactor = math.Sqrt(1 + math.Log(factor)/math.Log(float64(orig)))
	}
	if s.AttentionFactor != nil {
		r.AttentionFactor = *s.AttentionFactor
	}
	// float32 as in transformers: 1 / (ext * theta^(2j/dim)).
	scaled := func(ext []float64) []float64 {
		inv := make([]float64, dim/2)
		for j := range inv {
			base := float32(math.Pow(theta, float64(2*j)/float64(dim)))
			inv[j] = float64(1 / (float32(ext[j]) * base))
		}
		return inv
	}
	r.InvFreq = scaled(s.ShortFactor)
	r.LongInvFreq, r.LongAbove = scaled(s.LongFactor), orig
	return r, nil
}

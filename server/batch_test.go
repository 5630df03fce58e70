package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func TestOptionsRefuseABadBatch(t *testing.T) {
	tests := []struct {
		field string
		edit  func(*Options)
	}{
		{"MaxBatch", func(o *Options) { o.MaxBatch = 0 }},
		{"MaxBatch", func(o *Options) { o.MaxBatch = -1 }},
		{"MaxBatch", func(o *Options) { o.MaxBatch = o.MaxSessions + 1 }},
		{"PrefillChunk", func(o *Options) { o.PrefillChunk = -1 }},
		{"PrefillChunk", func(o *Options) { o.PrefillChunk = o.Runner.Planner().Prefill + 1 }},
		{"ChunkBudget", func(o *Options) { o.ChunkBudget = 1 }},
		{"ChunkBudget", func(o *Options) { o.ChunkBudget = -1.5 }},
	}
	for _, tc := range tests {
		o := testOptions(t)
		o.Pool = RunnerPool(nil)
		tc.edit(&o)
		_, err := New(o)
		var oe *OptionError
		if !errors.Is(err, ErrOptions) || !errors.As(err, &oe) || oe.Field != tc.field || !strings.Contains(err.Error(), "Options."+tc.field) {
			t.Errorf("MaxBatch %d, PrefillChunk %d: error %v, want an *OptionError of ErrOptions for %s", o.MaxBatch, o.PrefillChunk, err, tc.field)
		}
	}
}

// streamTokens sends a greedy streamed completion and returns the text of each event;
// cancel, when not nil, is called after the first text event and the stream read to its end.
func streamTokens(t *testing.T, ctx context.Context, base, prompt string, maxTokens int, afterFirst func()) ([]string, error) {
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"temperature":0,"stream":true}`, prompt, maxTokens)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var pieces []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		c := decode[completionBody](t, []byte(data))
		if len(c.Choices) > 0 && c.Choices[0].Text != "" {
			pieces = append(pieces, c.Choices[0].Text)
			if len(pieces) == 1 && afterFirst != nil {
				afterFirst()
			}
		}
	}
	return pieces, sc.Err()
}

func TestCancelledStreamLeavesTheOthersUnaltered(t *testing.T) {
	s, base, pool := startServer(t, nil)
	prompts := []string{"Once upon a time", "The dog", "Lily and Ben went to the park", "One day, a girl named Lily"}
	want := make([]string, len(prompts))
	for i, p := range prompts {
		ids, err := s.o.Tokenizer.Encode(p, true)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = greedyReference(t, ids, 40)
	}
	// Stream 0 is cancelled after its first text; the others run to the end beside it.
	ctx0, cancel0 := context.WithCancel(context.Background())
	defer cancel0()
	got := make([]string, len(prompts))
	errs := make([]error, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() {
			ctx, after := context.Background(), func() {}
			if i == 0 {
				ctx, after = ctx0, cancel0
			}
			pieces, err := streamTokens(t, ctx, base, p, 40, after)
			got[i], errs[i] = strings.Join(pieces, ""), err
		})
	}
	wg.Wait()
	if errs[0] == nil && got[0] == want[0] {
		// On a loaded machine the tiny model can finish 40 tokens before the client's
		// cancellation reaches the server; what matters is that the others are unaltered.
		t.Logf("the cancelled stream ran to its end before the cancellation arrived: %q", got[0])
	}
	for i := 1; i < len(prompts); i++ {
		if errs[i] != nil {
			t.Errorf("stream %d: %v", i, errs[i])
		} else if got[i] != want[i] {
			t.Errorf("stream %d (%q): %q, want %q as when run alone", i, prompts[i], got[i], want[i])
		}
	}
	waitFor(t, func() bool { return pool.Stats().Leased == 0 && s.batch.Stats().Running == 0 })
}

func TestMetricsForRouters(t *testing.T) {
	s, base, _ := startServer(t, nil)
	// While one generation is held after its first token, it runs and holds a session.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.setTokenHook(func(ctx context.Context) {
		once.Do(func() {
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
		})
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(t, base+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":10,"temperature":0}`)
	}()
	<-held
	for name, want := range map[string]float64{
		"vllm:num_requests_running": 1,
		"vllm:num_requests_waiting": 0,
		"vllm:kv_cache_usage_perc":  0.25, // one of the pool's 4 sessions
	} {
		if got := metricValue(t, base, name); got != want {
			t.Errorf("while one request runs: %s = %v, want %v", name, got, want)
		}
	}
	close(release)
	<-done
	post(t, base+"/v1/completions", `{"prompt":"The dog","max_tokens":6,"temperature":0}`)

	tests := []struct {
		name string
		want float64
	}{
		{"vllm:num_requests_running", 0},
		{"vllm:num_requests_waiting", 0},
		{"vllm:kv_cache_usage_perc", 0},
		{"vllm:time_to_first_token_seconds_count", 2},             // one per request
		{`vllm:time_to_first_token_seconds_bucket{le="+Inf"}`, 2}, // cumulative buckets end at the count
	}
	for _, tc := range tests {
		if got := metricValue(t, base, tc.name); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	tokens := metricValue(t, base, "hfstatic_completion_tokens_total")
	if got := metricValue(t, base, "vllm:inter_token_latency_seconds_count"); got != tokens-2 {
		t.Errorf("inter-token gaps: %v, want %v (tokens %v less one per request)", got, tokens-2, tokens)
	}
	if got := metricValue(t, base, "vllm:time_to_first_token_seconds_sum"); got <= 0 || got > 60 {
		t.Errorf("time to first token sum %v s, want in (0, 60]", got)
	}
	if steps := metricValue(t, base, "hfstatic_batch_size_count"); steps < tokens-2 {
		t.Errorf("%v batched steps recorded, want at least one per decode step (%v)", steps, tokens-2)
	}
	if got, steps := metricValue(t, base, "vllm:iteration_tokens_total_count"), metricValue(t, base, "hfstatic_batch_size_count"); got != steps {
		t.Errorf("iteration tokens histogram counts %v steps, batch size histogram %v", got, steps)
	}
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatal(code)
	}
	for _, typ := range []string{"# TYPE vllm:num_requests_running gauge", "# TYPE vllm:num_requests_waiting gauge",
		"# TYPE vllm:kv_cache_usage_perc gauge", "# TYPE vllm:time_to_first_token_seconds histogram",
		"# TYPE vllm:inter_token_latency_seconds histogram", "# TYPE hfstatic_batch_size histogram"} {
		if !strings.Contains(string(body), typ+"\n") {
			t.Errorf("/metrics lacks %q", typ)
		}
	}
}

// TestDisconnectDuringSeveralStreamedChoicesFreesEverything checks n > 1 streaming whose
// client goes away mid-way: every choice stops, the forks leave the batch, the session
// goes back to the pool, and the next request is served.
func TestDisconnectDuringSeveralStreamedChoicesFreesEverything(t *testing.T) {
	s, base, pool := startServer(t, nil)
	firstToken := make(chan struct{})
	var once sync.Once
	s.setTokenHook(func(ctx context.Context) {
		once.Do(func() { close(firstToken) })
		<-ctx.Done() // every choice holds until the client leaves
	})
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"prompt":"Once upon a time","max_tokens":400,"n":3,"stream":true}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-firstToken
	cancel()
	<-done
	waitFor(t, func() bool { return pool.Stats().Leased == 0 && s.batch.Stats().Running == 0 })
	s.setTokenHook(func(context.Context) {})
	if code, _, resp := post(t, base+"/v1/completions", `{"prompt":"Once","max_tokens":4,"n":3}`); code != http.StatusOK {
		t.Errorf("next request: %d %s", code, resp)
	}
}

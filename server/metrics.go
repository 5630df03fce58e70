package server

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Histogram upper bounds: request durations, time to the first token and between two
// tokens (seconds), and sequences or tokens in one batched step.
var (
	durationBuckets   = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	firstTokenBuckets = []float64{0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10, 20, 40, 80}
	tokenGapBuckets   = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10}
	batchSizeBuckets  = []float64{1, 2, 4, 8, 16, 32, 64}
	stepTokenBuckets  = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}
)

// rateWindow is the span over which tokens_per_second gauges are measured.
const rateWindow = 10 * time.Second

// metrics counts what /metrics exports. All methods are safe for concurrent use.
type metrics struct {
	mu               sync.Mutex
	requests         map[requestKey]int64
	durations        map[string]*histogram // by path
	promptTokens     int64
	completionTokens int64
	cachedTokens     int64
	rejected         map[string]int64 // by reason
	waiting          int              // requests in the queue now
	running          int              // generations running now
	recent           []tokenEvent     // generated tokens in the last rateWindow
	promptRecent     []tokenEvent
	meanDuration     float64    // exponentially weighted mean of generation durations, seconds
	firstToken       *histogram // seconds from a generation's arrival to its first token
	tokenGap         *histogram // seconds between two tokens of one generation
	batchSize        *histogram // sequences in one batched step
	stepTokens       *histogram // tokens (rows) in one batched step
	now              func() time.Time
}

type requestKey struct {
	path string
	code int
}

type tokenEvent struct {
	at time.Time
	n  int
}

type histogram struct {
	bounds []float64 // upper bounds, ascending
	counts []int64   // per bucket, not cumulative; one extra for +Inf
	sum    float64
	n      int64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]int64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.sum += v
	h.n++
}

// write prints the histogram's series; labels is "" or `key="value",` pairs ending in a comma.
func (h *histogram) write(w io.Writer, name, labels string) {
	var cum int64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{%sle=\"%g\"} %d\n", name, labels, b, cum)
	}
	fmt.Fprintf(w, "%s_bucket{%sle=\"+Inf\"} %d\n", name, labels, h.n)
	labels = strings.TrimSuffix(labels, ",")
	if labels != "" {
		labels = "{" + labels + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %g\n", name, labels, h.sum)
	fmt.Fprintf(w, "%s_count%s %d\n", name, labels, h.n)
}

func newMetrics() *metrics {
	return &metrics{requests: map[requestKey]int64{}, durations: map[string]*histogram{},
		rejected: map[string]int64{}, firstToken: newHistogram(firstTokenBuckets), tokenGap: newHistogram(tokenGapBuckets),
		batchSize: newHistogram(batchSizeBuckets), stepTokens: newHistogram(stepTokenBuckets), now: time.Now}
}

// token records one generated token: d is the time since the generation arrived (first
// token) or since its previous token.
func (m *metrics) token(first bool, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if first {
		m.firstToken.observe(d.Seconds())
	} else {
		m.tokenGap.observe(d.Seconds())
	}
}

// step records one batched step of seqs sequences and tokens rows.
func (m *metrics) step(seqs, tokens int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.batchSize.observe(float64(seqs))
	m.stepTokens.observe(float64(tokens))
}

func (m *metrics) request(path string, code int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{path, code}]++
	h := m.durations[path]
	if h == nil {
		h = newHistogram(durationBuckets)
		m.durations[path] = h
	}
	h.observe(d.Seconds())
}

// enqueue adds a waiting request unless the queue already holds limit.
func (m *metrics) enqueue(limit int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiting >= limit {
		return false
	}
	m.waiting++
	return true
}

func (m *metrics) dequeue() {
	m.mu.Lock()
	m.waiting--
	m.mu.Unlock()
}

func (m *metrics) reject(why error) {
	m.mu.Lock()
	m.rejected[why.Error()]++
	m.mu.Unlock()
}

func (m *metrics) started() {
	m.mu.Lock()
	m.running++
	m.mu.Unlock()
}

// finished records one generation: prompt tokens processed, tokens taken from the cache,
// tokens generated, and how long it ran.
func (m *metrics) finished(prompt, cached, generated int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running--
	m.promptTokens += int64(prompt)
	m.cachedTokens += int64(cached)
	m.completionTokens += int64(generated)
	now := m.now()
	m.recent = append(trim(m.recent, now), tokenEvent{now, generated})
	m.promptRecent = append(trim(m.promptRecent, now), tokenEvent{now, prompt - cached})
	const alpha = 0.2
	if m.meanDuration == 0 {
		m.meanDuration = d.Seconds()
	} else {
		m.meanDuration += alpha * (d.Seconds() - m.meanDuration)
	}
}

// trim drops events older than rateWindow.
func trim(ev []tokenEvent, now time.Time) []tokenEvent {
	k := 0
	for k < len(ev) && now.Sub(ev[k].at) > rateWindow {
		k++
	}
	return append(ev[:0], ev[k:]...)
}

func rate(ev []tokenEvent, now time.Time) float64 {
	n := 0
	for _, e := range ev {
		if now.Sub(e.at) <= rateWindow {
			n += e.n
		}
	}
	return float64(n) / rateWindow.Seconds()
}

// retryAfter estimates, in whole seconds (≥ 1), when a slot is likely to be free.
func (m *metrics) retryAfter(sessions, queue int) int {
	m.mu.Lock()
	mean := m.meanDuration
	m.mu.Unlock()
	est := mean * float64(queue+sessions) / float64(sessions)
	return max(1, int(math.Ceil(est)))
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var ps PoolStats
	var bs batchStats
	if s.batch != nil { // a server without generation has neither
		ps, bs = s.o.Pool.Stats(), s.batch.Stats()
	}
	s.metrics.write(w, ps, bs, s.o.MaxSessions, s.o.MaxQueue)
}

// write prints every metric in the Prometheus text exposition format.
func (m *metrics) write(w io.Writer, ps PoolStats, bs batchStats, sessions, queue int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	metric := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("hfstatic_requests_total", "counter", "HTTP requests by path and status code.")
	keys := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].path != keys[j].path {
			return keys[i].path < keys[j].path
		}
		return keys[i].code < keys[j].code
	})
	for _, k := range keys {
		fmt.Fprintf(w, "hfstatic_requests_total{path=%q,code=\"%d\"} %d\n", k.path, k.code, m.requests[k])
	}
	metric("hfstatic_request_duration_seconds", "histogram", "HTTP request durations by path.")
	paths := make([]string, 0, len(m.durations))
	for p := range m.durations {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		m.durations[p].write(w, "hfstatic_request_duration_seconds", fmt.Sprintf("path=%q,", p))
	}
	metric("hfstatic_rejected_requests_total", "counter", "Requests refused by admission (queue_full: 429, queue_timeout: 503).")
	for _, reason := range []string{errQueueFull.Error(), errQueueTimeout.Error()} {
		fmt.Fprintf(w, "hfstatic_rejected_requests_total{reason=%q} %d\n", underscore(reason), m.rejected[reason])
	}
	counter := func(name, help string, v int64) {
		metric(name, "counter", help)
		fmt.Fprintf(w, "%s %d\n", name, v)
	}
	gauge := func(name, help string, v float64) {
		metric(name, "gauge", help)
		fmt.Fprintf(w, "%s %g\n", name, v)
	}
	counter("hfstatic_prompt_tokens_total", "Prompt tokens of finished generations (cached ones included).", m.promptTokens)
	counter("hfstatic_completion_tokens_total", "Tokens generated.", m.completionTokens)
	gauge("hfstatic_completion_tokens_per_second", "Tokens generated per second over the last 10 s.", rate(m.recent, now))
	gauge("hfstatic_prompt_tokens_per_second", "Prompt tokens processed (not taken from the cache) per second over the last 10 s.", rate(m.promptRecent, now))
	gauge("hfstatic_generations_running", "Generations running now.", float64(m.running))
	gauge("hfstatic_generations_max", "Most generations that run at once (--sessions).", float64(sessions))
	gauge("hfstatic_queue_waiting", "Requests waiting for a session.", float64(m.waiting))
	gauge("hfstatic_queue_capacity", "Most requests that may wait for a session.", float64(queue))
	gauge("hfstatic_sessions", "Sessions alive in the pool (leased or free).", float64(ps.Sessions))
	gauge("hfstatic_sessions_leased", "Sessions leased now.", float64(ps.Leased))
	counter("hfstatic_prefix_cache_hits_total", "Session acquisitions that reused a cached prompt prefix.", ps.Hits)
	counter("hfstatic_prefix_cache_misses_total", "Session acquisitions that reused nothing.", ps.Misses)
	counter("hfstatic_prefix_cache_reused_tokens_total", "Prompt tokens not re-processed thanks to prefix reuse.", ps.ReusedTokens)
	counter("hfstatic_prefix_cache_recomputes_total", "Adoptions whose sliding-window cache could not be rewound (recomputed).", ps.Recomputes)
	counter("hfstatic_session_evictions_total", "Free sessions reset to make room for another prompt.", ps.Evictions)
	gauge("hfstatic_sessions_limit", "Most sessions the pool holds (--sessions and --memory-budget).", float64(ps.Limit))

	// What an inference router scrapes (the Gateway API Inference Extension's model server
	// protocol), named as vLLM names them so that routers' default settings apply.
	gauge("vllm:num_requests_running", "Requests whose sequence is in the batch.", float64(bs.Running))
	gauge("vllm:num_requests_waiting", "Requests waiting in the admission queue for a session.", float64(m.waiting))
	gauge("vllm:kv_cache_usage_perc", "Fraction (0-1) of the session cache memory the pool may hold that leased sessions use.", cacheUsage(ps))
	metric("vllm:time_to_first_token_seconds", "histogram", "Seconds from a request's arrival to its first generated token.")
	m.firstToken.write(w, "vllm:time_to_first_token_seconds", "")
	metric("vllm:inter_token_latency_seconds", "histogram", "Seconds between two generated tokens of one request.")
	m.tokenGap.write(w, "vllm:inter_token_latency_seconds", "")
	metric("vllm:iteration_tokens_total", "histogram", "Tokens (prompt chunk and decode rows) in one batched step.")
	m.stepTokens.write(w, "vllm:iteration_tokens_total", "")
	metric("hfstatic_batch_size", "histogram", "Sequences in one batched step.")
	m.batchSize.write(w, "hfstatic_batch_size", "")
}

// cacheUsage is the share of the pool's session memory that leased sessions hold. Every
// session of a program has the same fixed-size caches, so it is leased ÷ limit; free
// sessions (kept for their prompt prefix) are evictable and count as unused.
func cacheUsage(ps PoolStats) float64 {
	if ps.Limit <= 0 {
		return 0
	}
	return min(1, float64(ps.Leased)/float64(ps.Limit))
}

func underscore(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' {
			b[i] = '_'
		}
	}
	return string(b)
}

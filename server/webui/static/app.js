// hfstatic's chat page. It talks only to the server that served it and keeps
// conversations in localStorage. Everything it shows of a reply or a stored conversation
// is built with createElement and text nodes: there is no innerHTML anywhere, so model
// output can never become markup or script.
"use strict";

const STORE_KEY = "hfstatic.conversations.v1";
const SETTINGS_KEY = "hfstatic.settings.v1";

const ui = {
  log: document.getElementById("log"),
  message: document.getElementById("message"),
  composer: document.getElementById("composer"),
  send: document.getElementById("send"),
  stop: document.getElementById("stop"),
  speed: document.getElementById("speed"),
  status: document.getElementById("status"),
  newChat: document.getElementById("new-chat"),
  conversations: document.getElementById("conversations"),
  modelName: document.getElementById("model-name"),
  modeNote: document.getElementById("mode-note"),
  system: document.getElementById("system"),
  temperature: document.getElementById("temperature"),
  maxTokens: document.getElementById("max-tokens"),
};

// The served model: its id, whether it has a chat template, its context in tokens.
const model = { id: "", chatTemplate: true, context: 0 };

// The reply being streamed: { controller } while a request runs, else null.
let streaming = null;

// ---- storage ----

function readJSON(key) {
  try {
    return JSON.parse(localStorage.getItem(key) || "null");
  } catch {
    return null;
  }
}

function writeJSON(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    showStatus("This browser did not keep the conversation (" + e.message + ").");
  }
}

// loadStore reads the stored conversations, keeping only well-formed messages.
function loadStore() {
  const raw = readJSON(STORE_KEY);
  const store = { current: "", conversations: [] };
  if (!raw || !Array.isArray(raw.conversations)) return store;
  for (const c of raw.conversations) {
    if (!c || typeof c.id !== "string" || !Array.isArray(c.messages)) continue;
    const messages = c.messages.filter((m) => m && (m.role === "user" || m.role === "assistant") && typeof m.content === "string")
      .map((m) => ({ role: m.role, content: m.content, stopped: m.stopped === true, speed: typeof m.speed === "string" ? m.speed : "" }));
    store.conversations.push({ id: c.id, title: typeof c.title === "string" ? c.title : "", messages });
  }
  if (store.conversations.some((c) => c.id === raw.current)) store.current = raw.current;
  return store;
}

const store = loadStore();

function saveStore() {
  writeJSON(STORE_KEY, store);
}

function current() {
  return store.conversations.find((c) => c.id === store.current) || null;
}

function newConversation() {
  const c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 8), title: "", messages: [] };
  store.conversations.unshift(c);
  store.current = c.id;
  return c;
}

function loadSettings() {
  const s = readJSON(SETTINGS_KEY) || {};
  if (typeof s.system === "string") ui.system.value = s.system;
  if (typeof s.temperature === "string" && s.temperature !== "") ui.temperature.value = s.temperature;
  if (typeof s.maxTokens === "string" && s.maxTokens !== "") ui.maxTokens.value = s.maxTokens;
}

function saveSettings() {
  writeJSON(SETTINGS_KEY, { system: ui.system.value, temperature: ui.temperature.value, maxTokens: ui.maxTokens.value });
}

// ---- safe Markdown ----

function el(tag, ...children) {
  const e = document.createElement(tag);
  for (const c of children) e.append(c);
  return e;
}

const text = (s) => document.createTextNode(s);

// Inline spans, tried at every position; the earliest match wins, then the first listed.
const INLINE = [
  { re: /`([^`\n]+)`/, make: (m) => el("code", text(m[1])) },
  { re: /\[([^\]\n]+)\]\(([^()\s]+)\)/, make: (m) => link(m[1], m[2], m[0]) },
  { re: /\*\*([^*\n]+)\*\*|__([^_\n]+)__/, make: (m) => el("strong", ...inline(m[1] || m[2])) },
  { re: /\*([^*\s][^*\n]*)\*|(?<![\w])_([^_\s][^_\n]*)_(?![\w])/, make: (m) => el("em", ...inline(m[1] || m[2])) },
];

// inline returns the nodes of one line of text with its spans.
function inline(s) {
  const out = [];
  while (s) {
    let best = null;
    for (const p of INLINE) {
      const m = p.re.exec(s);
      if (m && (!best || m.index < best.m.index)) best = { m, p };
    }
    if (!best) {
      out.push(text(s));
      break;
    }
    if (best.m.index > 0) out.push(text(s.slice(0, best.m.index)));
    out.push(best.p.make(best.m));
    s = s.slice(best.m.index + best.m[0].length);
  }
  return out;
}

// link makes an anchor for absolute http, https and mailto URLs only; anything else
// (javascript:, data:, relative paths) stays text.
function link(label, href, source) {
  let url;
  try {
    url = new URL(href);
  } catch {
    return text(source);
  }
  if (!["http:", "https:", "mailto:"].includes(url.protocol)) return text(source);
  const a = el("a", ...inline(label));
  a.href = url.href;
  a.rel = "noopener noreferrer nofollow";
  a.target = "_blank";
  return a;
}

// lines joins lines of text with <br>, each with its inline spans.
function lines(ls) {
  const out = [];
  ls.forEach((l, i) => {
    if (i > 0) out.push(el("br"));
    out.push(...inline(l));
  });
  return out;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

function startsBlock(l) {
  return FENCE.test(l) || HEADING.test(l) || RULE.test(l) || QUOTE.test(l) || ITEM.test(l);
}

// markdown renders text as block elements: fenced code, headings, rules, quotes, lists and
// paragraphs (single newlines kept as line breaks). An unclosed fence runs to the end, as
// it does while a reply streams.
function markdown(src) {
  const frag = document.createDocumentFragment();
  const ls = src.replace(/\r\n?/g, "\n").split("\n");
  for (let i = 0; i < ls.length; ) {
    const l = ls[i];
    let m;
    if ((m = FENCE.exec(l))) {
      const fence = m[1];
      const body = [];
      for (i++; i < ls.length && !ls[i].trim().startsWith(fence); i++) body.push(ls[i]);
      i++;
      const code = el("code", text(body.join("\n")));
      if (m[2]) code.className = "language-" + m[2];
      frag.append(el("pre", code));
    } else if (!l.trim()) {
      i++;
    } else if ((m = HEADING.exec(l))) {
      frag.append(el("h" + Math.min(m[1].length + 2, 6), ...inline(m[2])));
      i++;
    } else if (RULE.test(l)) {
      frag.append(el("hr"));
      i++;
    } else if (QUOTE.test(l)) {
      const body = [];
      for (; i < ls.length && (m = QUOTE.exec(ls[i])); i++) body.push(m[1]);
      frag.append(el("blockquote", markdown(body.join("\n"))));
    } else if ((m = ITEM.exec(l))) {
      const ordered = /\d/.test(m[2]);
      const list = el(ordered ? "ol" : "ul");
      if (ordered && parseInt(m[2], 10) !== 1) list.start = parseInt(m[2], 10);
      while (i < ls.length && (m = ITEM.exec(ls[i])) && /\d/.test(m[2]) === ordered) {
        const item = [m[3]];
        // Indented lines that start no block continue the item.
        for (i++; i < ls.length && /^\s+\S/.test(ls[i]) && !ITEM.test(ls[i]); i++) item.push(ls[i].trim());
        list.append(el("li", ...lines(item)));
      }
      frag.append(list);
    } else {
      const para = [];
      for (; i < ls.length && ls[i].trim() && (para.length === 0 || !startsBlock(ls[i])); i++) para.push(ls[i]);
      frag.append(el("p", ...lines(para)));
    }
  }
  return frag;
}

// ---- the conversation on screen ----

function showStatus(msg) {
  ui.status.textContent = msg;
}

// messageView builds one message's element; its body is filled by fillBody.
function messageView(m) {
  const who = el("h2", text(m.role === "user" ? "You" : "Model"));
  who.className = "who";
  const body = el("div");
  body.className = "body";
  const meta = el("p");
  meta.className = "meta";
  const article = el("article", who, body, meta);
  article.className = "msg " + m.role;
  fillBody(body, m);
  fillMeta(meta, m);
  return { article, body, meta };
}

function fillBody(body, m) {
  if (m.role === "user") {
    body.replaceChildren(text(m.content)); // shown as typed (white-space: pre-wrap)
  } else {
    body.replaceChildren(markdown(m.content));
  }
}

function fillMeta(meta, m) {
  const parts = [];
  if (m.speed) parts.push(m.speed);
  if (m.stopped) parts.push("stopped");
  meta.textContent = parts.join(" · ");
  meta.hidden = parts.length === 0;
}

function renderLog() {
  const c = current();
  ui.log.replaceChildren();
  if (!c) return;
  for (const m of c.messages) ui.log.append(messageView(m).article);
  ui.log.scrollTop = ui.log.scrollHeight;
}

function renderConversations() {
  ui.conversations.replaceChildren();
  for (const c of store.conversations) {
    const title = c.title || "New conversation";
    const open = el("button", text(title));
    open.type = "button";
    open.className = "conversation";
    if (c.id === store.current) open.setAttribute("aria-current", "true");
    open.addEventListener("click", () => switchTo(c.id));
    const del = el("button", text("×"));
    del.type = "button";
    del.className = "delete";
    del.setAttribute("aria-label", "Delete conversation: " + title);
    del.addEventListener("click", () => remove(c.id));
    ui.conversations.append(el("li", open, del));
  }
}

// dropEmpty forgets conversations without messages, except the current one.
function dropEmpty() {
  store.conversations = store.conversations.filter((c) => c.messages.length > 0 || c.id === store.current);
}

function switchTo(id) {
  stop();
  store.current = id;
  dropEmpty();
  saveStore();
  renderConversations();
  renderLog();
  ui.message.focus();
}

function remove(id) {
  if (current() && current().id === id) stop();
  store.conversations = store.conversations.filter((c) => c.id !== id);
  if (store.current === id) store.current = store.conversations.length ? store.conversations[0].id : "";
  saveStore();
  renderConversations();
  renderLog();
  ui.newChat.focus();
}

function setStreaming(on) {
  ui.stop.hidden = !on;
  ui.send.disabled = on;
}

// ---- talking to the server ----

async function loadModel() {
  try {
    const res = await fetch("/v1/models");
    if (!res.ok) throw new Error("GET /v1/models answered " + res.status);
    const list = await res.json();
    const m = list.data && list.data[0];
    if (!m) throw new Error("GET /v1/models lists no model");
    model.id = String(m.id);
    model.chatTemplate = m.chat_template !== false;
    model.context = Number(m.max_model_len) || 0;
    ui.modelName.textContent = model.id;
    document.title = model.id + " · hfstatic chat";
    if (!model.chatTemplate) {
      ui.modeNote.textContent = "This model has no chat template: the page sends the conversation as plain text to " +
        "/v1/completions, and the model continues it.";
      ui.modeNote.hidden = false;
    }
  } catch (e) {
    showStatus("Cannot reach the model: " + e.message);
  }
}

// plainText runs the conversation's text together for a model without a chat template: a
// reply continues the text as the model wrote it; before the system prompt's and the
// user's parts comes a space where neither side brings whitespace.
function plainText(parts) {
  let s = "";
  for (const p of parts) {
    if (s && p.role !== "assistant" && !/\s$/.test(s) && !/^\s/.test(p.content)) s += " ";
    s += p.content;
  }
  return s;
}

// request builds the API call for the conversation so far (without the reply being made).
function request(messages) {
  const system = ui.system.value;
  const body = { model: model.id || undefined, stream: true, stream_options: { include_usage: true } };
  const t = parseFloat(ui.temperature.value);
  if (!Number.isNaN(t)) body.temperature = t;
  const n = parseInt(ui.maxTokens.value, 10);
  if (n > 0) body.max_tokens = n;
  if (model.chatTemplate) {
    body.messages = (system.trim() ? [{ role: "system", content: system }] : [])
      .concat(messages.map((m) => ({ role: m.role, content: m.content })));
    return { url: "/v1/chat/completions", body };
  }
  body.prompt = plainText((system.trim() ? [{ role: "system", content: system }] : []).concat(messages));
  return { url: "/v1/completions", body };
}

// events yields the data of each server-sent event of a response body.
async function* events(stream) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (data) yield data;
    }
  }
}

async function errorMessage(res) {
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) return body.error.message;
  } catch {}
  return "the server answered " + res.status;
}

function formatSpeed(tokens, seconds) {
  if (tokens < 1 || !(seconds > 0)) return "";
  return (tokens / seconds).toFixed(1) + " tok/s";
}

async function send() {
  const content = ui.message.value;
  if (!content.trim() || streaming) return;
  showStatus("");
  const conv = current() || newConversation();
  const history = conv.messages.slice();
  const user = { role: "user", content };
  const reply = { role: "assistant", content: "", stopped: false, speed: "" };
  conv.messages.push(user, reply);
  if (!conv.title) conv.title = content.trim().split("\n")[0].slice(0, 60);
  ui.message.value = "";
  saveStore();
  renderConversations();
  const userView = messageView(user);
  ui.log.append(userView.article);
  const view = messageView(reply);
  view.article.setAttribute("aria-busy", "true");
  ui.log.append(view.article);
  ui.log.scrollTop = ui.log.scrollHeight;

  const { url, body } = request(history.concat([user]));
  const controller = new AbortController();
  streaming = { controller };
  setStreaming(true);
  ui.speed.textContent = "";
  // Speed: tokens per second of decoding, from the first token to the last; a reply too
  // short or too bursty to time that way is timed from the request (its prompt included).
  const sent = performance.now();
  let first = 0, last = 0, pieces = 0, usageTokens = 0, drawn = false;
  const draw = () => {
    drawn = false;
    fillBody(view.body, reply);
    ui.log.scrollTop = ui.log.scrollHeight;
  };
  const speed = () => {
    const tokens = usageTokens || pieces;
    if (tokens >= 2 && last - first >= 250) return formatSpeed(tokens - 1, (last - first) / 1000);
    return formatSpeed(tokens, (last - sent) / 1000);
  };
  let failed = "";
  try {
    const res = await fetch(url, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: controller.signal,
    });
    if (!res.ok) throw new Error(await errorMessage(res));
    for await (const data of events(res.body)) {
      if (data === "[DONE]") break;
      const obj = JSON.parse(data);
      if (obj.error) throw new Error(obj.error.message || "the server failed");
      if (obj.usage && obj.usage.completion_tokens) usageTokens = obj.usage.completion_tokens;
      const choice = obj.choices && obj.choices[0];
      const piece = choice ? (model.chatTemplate ? choice.delta && choice.delta.content : choice.text) : "";
      if (!piece) continue;
      const now = performance.now();
      if (!first) first = now;
      last = now;
      pieces++;
      reply.content += piece;
      ui.speed.textContent = speed();
      if (!drawn) {
        drawn = true;
        requestAnimationFrame(draw);
      }
    }
  } catch (e) {
    if (e.name === "AbortError") reply.stopped = true;
    else failed = e.message;
  }
  streaming = null;
  setStreaming(false);
  view.article.setAttribute("aria-busy", "false");
  if (failed && !reply.content) {
    // Nothing came back: the exchange is undone and the message is back in the box.
    conv.messages.splice(conv.messages.length - 2, 2);
    view.article.remove();
    userView.article.remove();
    ui.message.value = content;
    showStatus("The reply failed: " + failed);
  } else {
    if (failed) showStatus("The reply was cut short: " + failed);
    reply.speed = speed();
    ui.speed.textContent = reply.speed;
    fillBody(view.body, reply);
    fillMeta(view.meta, reply);
  }
  saveStore();
  renderConversations();
  ui.message.focus();
}

function stop() {
  if (streaming) streaming.controller.abort();
}

// ---- wiring ----

ui.composer.addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});
ui.message.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  } else if (e.key === "Escape" && streaming) {
    e.preventDefault();
    stop();
  }
});
ui.stop.addEventListener("click", () => {
  stop();
  ui.message.focus();
});
ui.newChat.addEventListener("click", () => {
  stop();
  const c = current();
  if (!c || c.messages.length > 0) newConversation();
  saveStore();
  renderConversations();
  renderLog();
  ui.message.focus();
});
for (const input of [ui.system, ui.temperature, ui.maxTokens]) input.addEventListener("change", saveSettings);

loadSettings();
renderConversations();
renderLog();
loadModel();
ui.message.focus();

package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is an error returned to the client as an OpenAI-style error object:
// {"error":{"message","type","param","code"}}.
type apiError struct {
	Status  int    // HTTP status
	Type    string // "invalid_request_error", "server_error", …
	Param   string // the request field at fault, or ""
	Code    string // a machine-readable code, or ""
	Message string
	// RetryAfter, when > 0, is sent as the Retry-After header (seconds).
	RetryAfter int
}

func (e *apiError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (param %s): %s", e.Type, e.Param, e.Message)
	}
	return e.Type + ": " + e.Message
}

// Error types, as OpenAI names them.
const (
	typeInvalidRequest = "invalid_request_error"
	typeNotFound       = "not_found_error"
	typeServer         = "server_error"
	typeOverloaded     = "overloaded_error"
)

func badRequest(param, code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Param: param, Code: code,
		Message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON shape of an error response.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	var param, code *string
	if e.Param != "" {
		param = &e.Param
	}
	if e.Code != "" {
		code = &e.Code
	}
	return errorBody{Error: errorObject{Message: e.Message, Type: e.Type, Param: param, Code: code}}
}

// writeError writes err as an OpenAI-style error response. Errors that are not *apiError
// become a 500 whose message does not leak internals beyond err's text.
func writeError(w http.ResponseWriter, err error) *apiError {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Type: typeServer, Message: err.Error()}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if ae.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	w.WriteHeader(ae.Status)
	json.NewEncoder(w).Encode(ae.body())
	return ae
}

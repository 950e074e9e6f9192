// Calls each planned operation through a generated Go client against the mock, and writes
// one report per call ({index, kind, detail, sent, answer}), as contract_driver.py does
// for Python. server/aiapi/contract.py builds it beside a copy of the package, with the
// import below naming the package's module. Each method is found by name and each JSON
// argument decoded into its parameter's type (reflect), so one driver serves any package.
//
//	contract-driver PLAN REPORT
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"time"

	api "MODULE"
)

type call struct {
	Index  int               `json:"index"`
	Method string            `json:"method"`
	Args   []json.RawMessage `json:"args"`
}

type plan struct {
	Calls   []call            `json:"calls"`
	Headers map[string]string `json:"headers"`
	Params  map[string]string `json:"params"`
	BaseURL string            `json:"base_url"`
}

type answer struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
}

type report struct {
	Index  int     `json:"index"`
	Kind   string  `json:"kind"`
	Error  string  `json:"error,omitempty"`
	Detail string  `json:"detail,omitempty"`
	Sent   bool    `json:"sent"`
	Answer *answer `json:"answer,omitempty"`
}

// recorder adds the query credentials (the client has no default query), notes that a
// request went out and keeps the raw answer.
type recorder struct {
	params map[string]string
	sent   bool
	last   *answer
}

func (r *recorder) RoundTrip(request *http.Request) (*http.Response, error) {
	if len(r.params) > 0 {
		query := request.URL.Query()
		for key, value := range r.params {
			query.Set(key, value)
		}
		request.URL.RawQuery = query.Encode()
	}
	r.sent = true
	response, err := http.DefaultTransport.RoundTrip(request)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(response.Body)
	response.Body.Close()
	if err != nil {
		return nil, err
	}
	response.Body = io.NopCloser(bytes.NewReader(data))
	if len(data) > 200000 {
		data = data[:200000]
	}
	r.last = &answer{response.StatusCode, response.Header.Get("Content-Type"), string(data)}
	return response, nil
}

var byteSlice = reflect.TypeOf([]byte(nil))

// argument decodes one JSON value into a value of the parameter's type.
func argument(raw json.RawMessage, kind reflect.Type) (reflect.Value, error) {
	target := reflect.New(kind)
	if len(raw) == 0 || string(raw) == "null" {
		return target.Elem(), nil
	}
	if kind == byteSlice {
		var text string
		if err := json.Unmarshal(raw, &text); err == nil {
			return reflect.ValueOf([]byte(text)), nil
		}
		return reflect.ValueOf([]byte(raw)), nil
	}
	if err := json.Unmarshal(raw, target.Interface()); err != nil {
		if kind.Kind() == reflect.String {
			return reflect.ValueOf(string(raw)).Convert(kind), nil
		}
		return target.Elem(), err
	}
	return target.Elem(), nil
}

func invoke(client *api.Client, c call) (result report) {
	result = report{Index: c.Index, Kind: "ok"}
	defer func() {
		if failure := recover(); failure != nil {
			result.Kind, result.Error, result.Detail = "raised", "panic", fmt.Sprint(failure)
		}
	}()
	method := reflect.ValueOf(client).MethodByName(c.Method)
	if !method.IsValid() {
		return report{Index: c.Index, Kind: "missing", Detail: "no method " + c.Method}
	}
	kind := method.Type()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in := []reflect.Value{reflect.ValueOf(ctx)}
	for i := 1; i < kind.NumIn(); i++ {
		var raw json.RawMessage
		if i-1 < len(c.Args) {
			raw = c.Args[i-1]
		}
		value, err := argument(raw, kind.In(i))
		if err != nil {
			return report{Index: c.Index, Kind: "raised", Error: "argument", Detail: err.Error()}
		}
		in = append(in, value)
	}
	out := method.Call(in)
	last := out[len(out)-1]
	if last.IsNil() {
		return result
	}
	err := last.Interface().(error)
	var apiError *api.APIError
	var typeError *json.UnmarshalTypeError
	var syntaxError *json.SyntaxError
	var urlError *url.Error
	switch {
	case errors.As(err, &apiError):
		result.Kind = "status"
	case errors.As(err, &typeError), errors.As(err, &syntaxError):
		result.Kind = "invalid-answer"
	case errors.As(err, &urlError):
		result.Kind, result.Error = "transport", fmt.Sprintf("%T", urlError.Err)
	default:
		result.Kind, result.Error = "raised", fmt.Sprintf("%T", err)
	}
	result.Detail = err.Error()
	if len(result.Detail) > 600 {
		result.Detail = result.Detail[:600]
	}
	return result
}

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var p plan
	if err := json.Unmarshal(data, &p); err != nil {
		panic(err)
	}
	client := api.NewClient(p.BaseURL)
	rec := &recorder{params: p.Params}
	client.HTTPClient = &http.Client{Transport: rec}
	for key, value := range p.Headers {
		client.Header.Set(key, value)
	}
	reports := []report{}
	for _, c := range p.Calls {
		rec.sent, rec.last = false, nil
		r := invoke(client, c)
		r.Sent = rec.sent
		if r.Kind != "ok" {
			r.Answer = rec.last
		}
		reports = append(reports, r)
	}
	out, err := json.Marshal(reports)
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(os.Args[2], out, 0o644); err != nil {
		panic(err)
	}
}

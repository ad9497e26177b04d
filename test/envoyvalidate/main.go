// Command envoyvalidate runs Envoy's own validation rules (the protoc-gen-validate
// code generated into go-control-plane) over xDS resources that skein encoded.
//
// Input (stdin, or the file named by the only argument), JSON:
//
//	{"resources": [{"typeUrl": "type.googleapis.com/...", "value": "<base64>", "label": "optional"}]}
//
// `value` is the resource's encoded bytes exactly as sent in the DiscoveryResponse's
// Any, so nothing is lost to a JSON mapping. Each resource is unmarshalled into its
// Go type and checked with ValidateAll(); ValidateAll does not look inside
// google.protobuf.Any, so every nested Any is unpacked and checked the same way,
// recursively. Also reported: an Any whose type is not linked in (Envoy would reject
// it the same way), and fields Envoy's protos do not know (proto3 keeps them as
// unknown bytes; Envoy ignores or rejects them, never acts on them).
//
// Output: one line per violation, `[label ]<Type> <name>: <path>: <problem>`.
// Exit status: 0 clean, 1 violations, 2 unreadable input.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	// The five resource types skein serves.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	// Every `@type` skein puts in an Any (pkg/envoy/common/xds.ts AnyType). A type
	// missing here makes its Any fail to unpack, which is reported.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/local_ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

type input struct {
	Resources []struct {
		TypeURL string `json:"typeUrl"`
		Value   []byte `json:"value"` // base64 in JSON
		Label   string `json:"label"`
	} `json:"resources"`
}

func main() {
	var src io.Reader = os.Stdin
	switch len(os.Args) {
	case 1:
	case 2:
		f, err := os.Open(os.Args[1])
		if err != nil {
			fail(err)
		}
		defer f.Close()
		src = f
	default:
		fail(fmt.Errorf("usage: envoyvalidate [file.json] (default: stdin)"))
	}
	var in input
	dec := json.NewDecoder(src)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		fail(fmt.Errorf("reading input: %w", err))
	}
	violations := 0
	for _, r := range in.Resources {
		for _, v := range checkResource(r.TypeURL, r.Value) {
			if r.Label != "" {
				fmt.Print(r.Label, " ")
			}
			fmt.Println(v)
			violations++
		}
	}
	if violations > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "envoyvalidate:", err)
	os.Exit(2)
}

// checkResource returns every violation in one encoded resource, each line
// prefixed with the resource's type and name.
func checkResource(typeURL string, value []byte) []string {
	short := typeURL[strings.LastIndex(typeURL, ".")+1:]
	msg, err := unpack(typeURL, value)
	if err != nil {
		return []string{fmt.Sprintf("%s ?: %v", short, err)}
	}
	c := &checker{}
	c.message(msg, "")
	prefix := fmt.Sprintf("%s %s: ", short, resourceName(msg.ProtoReflect()))
	out := make([]string, len(c.problems))
	for i, p := range c.problems {
		out[i] = prefix + p
	}
	return out
}

// unpack resolves a type URL among the linked types and unmarshals into it.
func unpack(typeURL string, value []byte) (proto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return nil, fmt.Errorf("type %q is not linked into envoyvalidate: %v", typeURL, err)
	}
	msg := mt.New().Interface()
	if err := proto.Unmarshal(value, msg); err != nil {
		return nil, fmt.Errorf("does not unmarshal as %s: %v", typeURL, err)
	}
	return msg, nil
}

// resourceName: ClusterLoadAssignment names itself by cluster_name, every other type by name.
func resourceName(m protoreflect.Message) string {
	for _, f := range []protoreflect.Name{"name", "cluster_name"} {
		if fd := m.Descriptor().Fields().ByName(f); fd != nil && fd.Kind() == protoreflect.StringKind {
			return fmt.Sprintf("%q", m.Get(fd).String())
		}
	}
	return "?"
}

type checker struct{ problems []string }

func (c *checker) add(path, format string, args ...any) {
	if path == "" {
		path = "."
	}
	c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
}

// message validates one message that is not itself nested in its parent's
// ValidateAll (a resource, or the payload of an Any), then walks it for Anys.
func (c *checker) message(m proto.Message, path string) {
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			c.problems = append(c.problems, flatten(err, path)...)
		}
	}
	c.walk(m.ProtoReflect(), path)
}

// walk visits every set field, reporting unknown fields and descending into
// sub-messages; an Any is unpacked and its payload checked as a message.
func (c *checker) walk(m protoreflect.Message, path string) {
	if unknown := m.GetUnknown(); len(unknown) > 0 {
		c.add(path, "fields unknown to %s: %v", m.Descriptor().FullName(), fieldNumbers(unknown))
	}
	if m.Descriptor().FullName() == "google.protobuf.Any" {
		c.any(m, path)
		return
	}
	type entry struct {
		fd protoreflect.FieldDescriptor
		v  protoreflect.Value
	}
	var fields []entry
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		fields = append(fields, entry{fd, v})
		return true
	})
	// Range order is unspecified; field-number order keeps the output stable.
	sort.Slice(fields, func(i, j int) bool { return fields[i].fd.Number() < fields[j].fd.Number() })
	for _, f := range fields {
		p := join(path, string(f.fd.Name()))
		switch {
		case f.fd.IsMap():
			if f.fd.MapValue().Message() == nil {
				continue
			}
			keys := []protoreflect.MapKey{}
			f.v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, k := range keys {
				c.walk(f.v.Map().Get(k).Message(), fmt.Sprintf("%s[%s]", p, k.String()))
			}
		case f.fd.IsList():
			if f.fd.Message() == nil {
				continue
			}
			for i := 0; i < f.v.List().Len(); i++ {
				c.walk(f.v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", p, i))
			}
		case f.fd.Message() != nil:
			c.walk(f.v.Message(), p)
		}
	}
}

func (c *checker) any(m protoreflect.Message, path string) {
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		c.add(path, "Any of unexpected Go type %T", m.Interface())
		return
	}
	inner, err := unpack(a.GetTypeUrl(), a.GetValue())
	if err != nil {
		c.add(path, "%v", err)
		return
	}
	c.message(inner, fmt.Sprintf("%s<%s>", path, inner.ProtoReflect().Descriptor().Name()))
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// fieldNumbers lists the field numbers present in raw unknown-field bytes.
func fieldNumbers(b []byte) []protowire.Number {
	var nums []protowire.Number
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			break
		}
		b = b[m:]
		nums = append(nums, num)
	}
	return nums
}

// The accessors every protoc-gen-validate error type has.
type validationError interface {
	Field() string
	Reason() string
	Cause() error
}

type multiError interface{ AllErrors() []error }

// flatten turns PGV's nested errors ("embedded message failed validation |
// caused by: ...") into one line per leaf violation with its field path.
func flatten(err error, path string) []string {
	if me, ok := err.(multiError); ok {
		var out []string
		for _, e := range me.AllErrors() {
			out = append(out, flatten(e, path)...)
		}
		return out
	}
	if ve, ok := err.(validationError); ok {
		p := join(path, ve.Field())
		if ve.Cause() != nil {
			return flatten(ve.Cause(), p)
		}
		return []string{fmt.Sprintf("%s: %s", p, ve.Reason())}
	}
	if path == "" {
		return []string{err.Error()}
	}
	return []string{fmt.Sprintf("%s: %s", path, err.Error())}
}

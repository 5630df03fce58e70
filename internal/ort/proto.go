package ort

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Field numbers of onnx.proto used here.
const (
	modelGraph          = 7  // ModelProto.graph
	graphInitializer    = 5  // GraphProto.initializer
	tensorName          = 8  // TensorProto.name
	tensorExternalData  = 13 // TensorProto.external_data
	tensorDataLocation  = 14 // TensorProto.data_location
	wireVarint, wireLen = 0, 2
)

var errProto = errors.New("malformed ONNX model")

// internalizeInitializers returns a copy of model in which the initializers named in
// supplied lose their external-data reference (external_data, data_location), so that
// ORT takes them from AddInitializer instead of looking for the external files. ORT 1.30
// rejects a model loaded from bytes whose initializer names an external file it cannot
// find, even when an override is supplied.
func internalizeInitializers(model []byte, supplied map[string]bool) ([]byte, error) {
	return rewriteField(model, modelGraph, func(graph []byte) ([]byte, error) {
		return rewriteField(graph, graphInitializer, func(tensor []byte) ([]byte, error) {
			name, err := stringField(tensor, tensorName)
			if err != nil || !supplied[name] {
				return tensor, err
			}
			return dropFields(tensor, tensorExternalData, tensorDataLocation)
		})
	})
}

// field is one protobuf field: its number, wire type and full encoding (tag included);
// for length-delimited fields, payload is the content.
type field struct {
	num, wire int
	raw       []byte
	payload   []byte
}

// fields splits a message into its fields.
func fields(msg []byte) ([]field, error) {
	var out []field
	for i := 0; i < len(msg); {
		start := i
		tag, n := binary.Uvarint(msg[i:])
		if n <= 0 {
			return nil, fmt.Errorf("%w: bad tag at byte %d", errProto, i)
		}
		i += n
		f := field{num: int(tag >> 3), wire: int(tag & 7)}
		switch f.wire {
		case wireVarint:
			_, n := binary.Uvarint(msg[i:])
			if n <= 0 {
				return nil, fmt.Errorf("%w: bad varint at byte %d", errProto, i)
			}
			i += n
		case 1: // 64-bit
			i += 8
		case 5: // 32-bit
			i += 4
		case wireLen:
			l, n := binary.Uvarint(msg[i:])
			if n <= 0 || l > uint64(len(msg)-i-n) {
				return nil, fmt.Errorf("%w: bad length at byte %d", errProto, i)
			}
			i += n
			f.payload = msg[i : i+int(l)]
			i += int(l)
		default:
			return nil, fmt.Errorf("%w: wire type %d at byte %d", errProto, f.wire, start)
		}
		if i > len(msg) {
			return nil, fmt.Errorf("%w: truncated field %d", errProto, f.num)
		}
		f.raw = msg[start:i]
		out = append(out, f)
	}
	return out, nil
}

// rewriteField re-encodes msg with every length-delimited field num replaced by edit's result.
func rewriteField(msg []byte, num int, edit func([]byte) ([]byte, error)) ([]byte, error) {
	fs, err := fields(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(msg))
	for _, f := range fs {
		if f.num != num || f.wire != wireLen {
			out = append(out, f.raw...)
			continue
		}
		p, err := edit(f.payload)
		if err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(num<<3|wireLen))
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	return out, nil
}

// dropFields re-encodes msg without the fields numbered nums.
func dropFields(msg []byte, nums ...int) ([]byte, error) {
	fs, err := fields(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(msg))
outer:
	for _, f := range fs {
		for _, n := range nums {
			if f.num == n {
				continue outer
			}
		}
		out = append(out, f.raw...)
	}
	return out, nil
}

// stringField returns the last string field num of msg ("" when absent).
func stringField(msg []byte, num int) (string, error) {
	fs, err := fields(msg)
	if err != nil {
		return "", err
	}
	s := ""
	for _, f := range fs {
		if f.num == num && f.wire == wireLen {
			s = string(f.payload)
		}
	}
	return s, nil
}

package nodeview

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// statusError is a refusal with its HTTP status, told to the caller as an
// API Status so that client-go turns it into an error it recognises
// (apierrors.IsForbidden, IsNotFound...).
type statusError struct{ status metav1.Status }

func (e *statusError) Error() string { return e.status.Message }

func refusal(code int32, reason metav1.StatusReason, msg string) error {
	return &statusError{metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: code, Reason: reason, Message: "node view: " + msg}}
}

func errUnauthorized(msg string) error {
	return refusal(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, msg)
}
func errForbidden(msg string) error {
	return refusal(http.StatusForbidden, metav1.StatusReasonForbidden, msg)
}

// errNotVisible is a pod, ReplicaSet, Job or Namespace the caller may not
// see: the same answer whether it exists elsewhere or not at all, so that a
// node learns nothing about other nodes' objects.
func errNotVisible(gr schema.GroupResource, namespace, name, node string) error {
	what := gr.Resource
	if gr.Group != "" {
		what += "." + gr.Group
	}
	where := name
	if namespace != "" {
		where = namespace + "/" + name
	}
	return refusal(http.StatusNotFound, metav1.StatusReasonNotFound,
		what+" "+where+" is not in the view of node "+node+" (it serves only what that node's pods need)")
}

// statusOf turns err into the Status sent back: a refusal as it is, an API
// server's answer as it came (its code and message), anything else as an
// internal error.
func statusOf(err error) metav1.Status {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		st := as.Status()
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		return st
	}
	st := apierrors.NewInternalError(err).ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Message = "node view: " + err.Error()
	return st
}

// writeError sends err as a Status.
func writeError(w http.ResponseWriter, err error) {
	st := statusOf(err)
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, &st)
}

// writeJSON sends obj, which must carry its kind and apiVersion.
func writeJSON(w http.ResponseWriter, code int, obj runtime.Object) {
	body, err := json.Marshal(obj)
	if err != nil {
		code, body = http.StatusInternalServerError, []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":"node view: encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

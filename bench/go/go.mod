module nervebench/goroles

go 1.22

require github.com/nerve-robotics/nerve/bindings/go v0.0.0

replace github.com/nerve-robotics/nerve/bindings/go => ../../bindings/go

# A submodule, installed on its own with oci://…//modules/shout.

variable "text" {
  type = string
}

output "text" {
  value = upper(var.text)
}

# Read by Terraform; OpenTofu reads main.tofu instead.
variable "only_in_tf" {
  type = string
}
